package tcp

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadClusterNeverQuotesTheFile: a file that is not a cluster file is
// refused without quoting any of its content: a private key passed as
// --cluster by mistake (the key files of dlm generals keygen are base64
// seeds) must not show up, even one character of it, in the error, and
// the error says what the file looks like and what a cluster file is.
// Failed before: encoding/json's syntax error quoted a byte of the seed
// ("invalid character '+' after top-level value").
func TestLoadClusterNeverQuotesTheFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name    string
		content string
		want    string
	}{
		{"key starting with a digit", base64.StdEncoding.EncodeToString([]byte("1\xf8\x20 a seed of thirty-two bytes..")) + "\n", "private key"},
		{"key starting with a letter", base64.StdEncoding.EncodeToString([]byte("x seed of thirty-two bytes, too.")) + "\n", "private key"},
		{"not json", "secret=hunter2\n", "not valid JSON at byte 1"},
		{"wrong type", `{"generals": "s3cr3t"}`, `field "generals"`},
		// Go 1.27 names the element too: "generals.0.addr".
		{"number for a string", `{"generals": [{"id": 0, "addr": 123456789}]}`, `.addr" holds a JSON number where string is expected`},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadCluster(path)
		if !errors.Is(err, ErrCluster) {
			t.Errorf("%s: err = %v, want ErrCluster", tt.name, err)
			continue
		}
		msg := strings.TrimPrefix(err.Error(), ErrCluster.Error()+": "+path)
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s: err = %q, want it to say %q", tt.name, msg, tt.want)
		}
		for _, q := range []string{"'", "s3cr3t", "hunter2", "123456789"} {
			if strings.Contains(msg, q) {
				t.Errorf("%s: err = %q quotes the file (%q)", tt.name, msg, q)
			}
		}
		for _, c := range strings.TrimSpace(tt.content) {
			if strings.Contains(msg, "'"+string(c)+"'") || strings.Contains(msg, `"`+string(c)+`"`) {
				t.Errorf("%s: err = %q quotes a character of the file", tt.name, msg)
				break
			}
		}
	}
}
