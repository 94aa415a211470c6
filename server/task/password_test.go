package task

import (
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	h := HashPassword("correct horse battery")
	if !PasswordMatches(h, "correct horse battery") || PasswordMatches(h, "correct horse batterY") || h == HashPassword("correct horse battery") {
		t.Errorf("hash %s", h)
	}
	for _, bad := range []string{"", "$argon2id$v=19$m=0,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=1048576,t=1,p=1$AAAA$AAAA",
		"$argon2i$v=19$m=19456,t=2,p=1$AAAA$AAAA", strings.Replace(h, "$v=19$", "$v=16$", 1), h + "$"} {
		if PasswordMatches(bad, "correct horse battery") {
			t.Errorf("%q matched", bad)
		}
	}
}
