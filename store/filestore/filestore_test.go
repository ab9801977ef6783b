package filestore_test

import (
	"testing"

	"huddle/store"
	"huddle/store/filestore"
	"huddle/store/storetest"
)

func factory(t *testing.T) storetest.Opener {
	dir := t.TempDir()
	return func(t *testing.T) store.Store {
		s, err := filestore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// TestContract holds the file store to the store contract.
func TestContract(t *testing.T) { storetest.Run(t, factory) }
