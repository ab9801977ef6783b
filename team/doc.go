// Package team owns the team directory (DESIGN §3): team.json, member status
// records, request records and their resolution, and the runtime that runs a
// lead and its teammates.
package team
