package natsurl_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"huddle/store/natsurl"
)

// TestCredsSecretsAreTheJWTAndTheSeed: of a credentials file as nsc writes
// it, the user JWT and the NKey seed are the secrets; its advice is not.
func TestCredsSecretsAreTheJWTAndTheSeed(t *testing.T) {
	const jwt = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJqdGkiOiJGQUtFIn0.c2lnbmF0dXJl"
	const seed = "SUAGMJH5XLGZKQQWAWKRZJIGMOU4HPFUYLXJMXOO5NH3SCEKCUGE6J6A5E"
	creds := "-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n\n" +
		"************************* IMPORTANT *************************\n" +
		"NKEY Seed printed below can be used to sign and prove identity.\n" +
		"NKEYs are sensitive and should be treated as secrets.\n\n" +
		"-----BEGIN USER NKEY SEED-----\n" + seed + "\n------END USER NKEY SEED------\n\n" +
		"*************************************************************\n"
	path := filepath.Join(t.TempDir(), "user.creds")
	if err := os.WriteFile(path, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := natsurl.CredsSecrets(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{jwt, seed}) {
		t.Errorf("CredsSecrets = %q, want the JWT and the seed", got)
	}
	if _, err := natsurl.CredsSecrets(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing file gave no error")
	}
}
