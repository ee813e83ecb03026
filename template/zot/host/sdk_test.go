// Unit tests of the host helper, which comes from the template.
package host

import "testing"

func TestAnOlderZotIsToldByItsVersion(t *testing.T) {
	for version, older := range map[string]bool{
		"0.1.62": true, "0.1.62 (abc1234, 2026-05-06)": true, "v0.1.9": true, "0.0.7": true,
		"0.1.63": false, "0.2.0": false, "1.0.0": false, "0.0.0": false, "": false, "dev": false,
	} {
		if olderVersion(version) != older {
			t.Errorf("olderVersion(%q) = %v, want %v", version, !older, older)
		}
	}
}
