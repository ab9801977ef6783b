// Package filestore is the store.Store of a team directory on one machine:
// the files of docs/ARCHITECTURE.md, "The team directory and the store", "Every file and its writer", written through the inbox,
// teamdir and ipc/trace functions with their disciplines. What those
// packages do not offer (a consumer loop that tells a clean stop from an
// interrupted one, request records and decisions, member heartbeats,
// per-member runtime leases, configuration files) is written here over
// teamdir's primitives; docs/ARCHITECTURE.md, "The team directory and the store" lists each.
package filestore
