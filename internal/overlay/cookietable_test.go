package overlay

import (
	"fmt"
	"testing"
)

// TestCookieTableKeepsTheLastNames: past cookieTableMax names the table
// keeps the generation before, so a name noted just before the rollover is
// still known after it (the whole table used to start over, forgetting a
// cookie a listing had just handed out: BAD_COOKIE on resuming after it
// once its entry was removed).
func TestCookieTableKeepsTheLastNames(t *testing.T) {
	var tab cookieTable
	for i := 0; i < cookieTableMax+100; i++ {
		name := fmt.Sprintf("n%06d", i)
		tab.note(nameCookie(name), name)
	}
	for _, i := range []int{cookieTableMax - 1, cookieTableMax - 1000, cookieTableMax + 99} {
		name := fmt.Sprintf("n%06d", i)
		if got, ok := tab.name(nameCookie(name)); !ok || got != name {
			t.Errorf("%s, noted %d names ago: %q, %v", name, cookieTableMax+99-i, got, ok)
		}
	}
}
