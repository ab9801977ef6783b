// Package supervisor is a team's runtime (docs/ARCHITECTURE.md,
// "Packages"): it runs the lead and the script, exec and llm teammates on a
// store.Store, holds their leases, keeps the requests' deadlines, carries
// their invocations (one ipc.Caller per member) and ships their logs.
package supervisor
