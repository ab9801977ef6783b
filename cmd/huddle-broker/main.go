// Command huddle-broker is huddle broker: a NATS server with JetStream on
// this machine, for teams kept in NATS. It is a binary of its own so that
// the server's packages load into it alone; huddle broker runs it (found
// beside huddle, else on PATH) with the flags it was given.
package main

import (
	"os"

	"huddle/internal/cli"
	"huddle/store/natsserver"
)

func main() {
	os.Exit(cli.MainBroker(os.Args[1:], os.Stdout, os.Stderr, start))
}

// start runs the embedded server for cli.MainBroker.
func start(addr, dir, token string) (cli.BrokerServer, error) {
	return natsserver.Start(natsserver.Options{Addr: addr, DataDir: dir, Token: token})
}
