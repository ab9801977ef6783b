// Package team owns what a team is and does (docs/ARCHITECTURE.md, "Packages"): team.json,
// member status records, request records and their resolution, the lead's
// operations (lead.go), the runtime that runs a lead and its teammates, the
// Caller constructor, the backend huddle serve exposes, and the Observer that
// folds the directory into Snapshots for a UI. The directory's paths and
// write disciplines are teamdir's.
package team
