// Package view folds a store.Store into the Snapshots a UI draws
// (Observe): members, requests, messages, traces and dead letters, woken
// by the store's watches.
package view
