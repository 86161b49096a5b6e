package contract_test

import (
	"testing"

	"github.com/acv/acv/api/contract"
)

func TestKeyIDChecksum(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := contract.NewKeyID()
		if !contract.ValidID(id) || !contract.KeyIDChecksumOK(id) || seen[id] {
			t.Fatalf("key id %q: valid=%v checksum=%v repeated=%v", id, contract.ValidID(id), contract.KeyIDChecksumOK(id), seen[id])
		}
		seen[id] = true
		// Any one changed character breaks the checksum.
		for pos := 0; pos < len(id); pos++ {
			b := []byte(id)
			if b[pos] == 'a' {
				b[pos] = 'b'
			} else {
				b[pos] = 'a'
			}
			if contract.KeyIDChecksumOK(string(b)) {
				t.Fatalf("%q passes the checksum with position %d changed", b, pos)
			}
		}
	}
	// Random ids (the ids of other kinds, or made up) almost never pass: 1 in 2^32.
	for i := 0; i < 10000; i++ {
		if contract.KeyIDChecksumOK(contract.NewID()) {
			t.Fatal("a random id passed the key checksum")
		}
	}
	if contract.KeyIDChecksumOK("ABCDEF0123456789ABCDEF0123456789") {
		t.Fatal("upper case accepted")
	}
}
