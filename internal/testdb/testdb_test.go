package testdb

import (
	"os"
	"testing"
)

func TestMariaDBGivesAFreshEmptyDatabase(t *testing.T) {
	d := MariaDB(t)
	var n int
	if err := d.DB.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?", d.Name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("fresh database %s has %d tables", d.Name, n)
	}
}

// Starting a private server takes seconds; run it on request only
// (SESSIONRT_TEST_THROWAWAY=1) since CI has a server on 3306.
func TestThrowawayServerStartsAndAnswers(t *testing.T) {
	if os.Getenv("SESSIONRT_TEST_THROWAWAY") == "" {
		t.Skip("set SESSIONRT_TEST_THROWAWAY=1 to start a private mariadbd")
	}
	addr, err := startThrowaway()
	if err != nil {
		t.Fatal(err)
	}
	if err := ping(addr); err != nil {
		t.Fatal(err)
	}
}
