// Package team owns the team directory (docs/DESIGN.md §3): team.json, member status
// records, request records and their resolution, the runtime that runs a
// lead and its teammates, and the Observer that folds the directory into
// Snapshots for a UI.
package team
