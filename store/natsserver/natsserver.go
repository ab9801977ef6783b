// Package natsserver runs an embedded NATS server with JetStream: what
// huddle-broker serves (`huddle broker`) and what the tests of the NATS
// store run on. It is apart from natsstore, the client, because the
// server's packages start work of their own when a process loads them
// (nats-server's pse reads /proc/self/stat once a second from its
// initialiser), and only huddle-broker and the tests should carry them.
package natsserver

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configure an embedded server.
type Options struct {
	// Addr is HOST:PORT to listen on; port 0 picks a free one.
	Addr string
	// DataDir is where JetStream keeps the streams and buckets.
	DataDir string
	// Token, when set, is what every client must present (in the URL:
	// nats://TOKEN@HOST:PORT/TEAM); without it anyone who reaches the
	// address may connect.
	Token string
	// TLS, when set, makes the server take TLS connections only, with this
	// configuration (its certificate): a client's tls:// URL requires TLS,
	// a nats:// one is taken up to it when the server asks.
	TLS *tls.Config
}

// Server is an embedded NATS server with JetStream.
type Server struct {
	ns   *server.Server
	addr string
}

// Start starts an embedded server and waits until it takes
// connections. A busy address is one clear error.
func Start(o Options) (*Server, error) {
	host, portStr, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: want HOST:PORT", o.Addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("address %q: bad port", o.Addr)
	}
	if o.DataDir == "" {
		return nil, errors.New("embedded server: no data directory")
	}
	if port != 0 {
		// The server would only log a busy port; try it first, so that it
		// is one error line here.
		ln, err := net.Listen("tcp", o.Addr)
		if err != nil {
			return nil, fmt.Errorf("address %s is in use or cannot be listened on: %w", o.Addr, err)
		}
		ln.Close()
	} else {
		port = server.RANDOM_PORT
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "huddle",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.DataDir,
		NoSigs:     true,
		NoLog:      true,
		// No monitoring port, no cluster, no leaf nodes: one machine.
		Authorization: o.Token,
		TLS:           o.TLS != nil,
		TLSConfig:     o.TLS,
		TLSTimeout:    5,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded server on %s did not start (is the address in use?)", o.Addr)
	}
	a, ok := ns.Addr().(*net.TCPAddr)
	if !ok {
		ns.Shutdown()
		return nil, errors.New("embedded server: no listening address")
	}
	return &Server{ns: ns, addr: net.JoinHostPort(host, strconv.Itoa(a.Port))}, nil
}

// Addr is HOST:PORT the server listens on.
func (s *Server) Addr() string { return s.addr }

// URL is the store URL of team on this server.
func (s *Server) URL(team string) string { return "nats://" + s.addr + "/" + team }

// Shutdown stops the server and waits until it is down; what JetStream
// holds is on disk in its data directory.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}
