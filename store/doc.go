// Package store is the interface behind which a team's shared state lives,
// so that one team can live in a directory on one machine (store/filestore,
// the default, the files of docs/ARCHITECTURE.md, "The team directory and the store" unchanged) or in NATS
// JetStream and span machines (store/natsstore). docs/ARCHITECTURE.md, "The team directory and the store"
// maps each part onto both.
//
// A Store covers what the team runtime and the CLI share:
//
//   - inboxes: Append, a durable consumer per member (Consume) whose handler
//     commits a message by returning nil, redeliveries marked, bad input and
//     failing handlers dead-lettered (DeadLetter, DeadLetters);
//   - request records and their decisions: CreateRequest is create-if-absent,
//     Decide is exclusive (the first resolver wins, across processes and
//     machines; every other one gets an *AlreadyError);
//   - member status with a heartbeat, read back with a "lost" verdict once a
//     member that should be alive has not been seen for a deadline;
//   - one lease per member's runtime: held by one holder at a time, taken
//     over only after it expires or is released;
//   - trace spans: AppendSpan and a watch (WatchSpans);
//   - the team's configuration files (team.json, members' IPC policies),
//     created once.
//
// The package holds the interface, its types and the rules both stores
// share (names, transitions, who may answer a request); it imports nothing
// under team/ or above, so team/ can be written on top of it.
package store
