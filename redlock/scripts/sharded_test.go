package scripts

import (
	"strings"
	"testing"
)

// Every script that announces a release has a sharded form that announces
// it by SPUBLISH alone: a change of the PUBLISH call's spelling must not
// leave a cluster's announcements broadcast to every master.
func TestShardedPublishesOnTheShard(t *testing.T) {
	for name, src := range map[string]string{"ReleasePublish": ReleasePublish, "ReleaseAll": ReleaseAll} {
		s := Sharded(src)
		if !strings.Contains(s, `"SPUBLISH"`) || strings.Contains(strings.ReplaceAll(s, "SPUBLISH", ""), "PUBLISH\"") {
			t.Errorf("Sharded(%s) does not announce by SPUBLISH alone:\n%s", name, s)
		}
	}
}
