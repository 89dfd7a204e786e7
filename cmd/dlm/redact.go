package main

import (
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// The one redaction of credentials (issue 16, defect 4). Every byte dlm
// itself writes, to stdout or stderr, goes through a redactWriter made in
// run: errors, log lines, status and doctor rows, the demo's view, the
// benchmark's and the checker's reports. Only the output of the command
// that dlm lock runs is passed on untouched (it is not dlm's to edit, and
// it goes straight to the descriptors).

// redacted replaces a password.
const redacted = "xxxxx"

// userinfoPattern finds the user information of a URL in free text:
// scheme://USERINFO@ (USERINFO has no '/', no space, no quote and no
// square bracket, so that the usage text "redis://[user:password@]host"
// stays as written).
const userinfoPattern = `([A-Za-z][A-Za-z0-9+.\-]*://)([^/\s"'@\[\]]*(?:@[^/\s"'@\[\]]*)*)@`

// minSecret is the shortest password also replaced where it appears
// outside a URL: shorter ones would blank out ordinary words.
const minSecret = 4

// redactor hides the passwords of node URLs in text.
type redactor struct {
	// userinfo is userinfoPattern, compiled.
	userinfo *regexp.Regexp
	// secrets are the passwords (raw and percent-decoded) found in the
	// node URLs dlm was given, longest first.
	secrets []string
}

// newRedactor collects the passwords of every URL-like word in args and
// in the environment variable DLM_NODES, whether or not the URL is valid
// (an invalid URL's message quotes it too).
func newRedactor(args []string) *redactor {
	r := &redactor{userinfo: regexp.MustCompile(userinfoPattern)}
	words := append([]string(nil), args...)
	words = append(words, strings.Split(os.Getenv(nodesEnv), ",")...)
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= minSecret && !seen[s] {
			seen[s] = true
			r.secrets = append(r.secrets, s)
		}
	}
	for _, w := range words {
		for _, part := range strings.Split(w, ",") {
			for _, m := range r.userinfo.FindAllStringSubmatch(part, -1) {
				info := m[2]
				pw := info
				if _, p, ok := strings.Cut(info, ":"); ok {
					pw = p
				}
				add(pw)
				if d, err := url.PathUnescape(pw); err == nil {
					add(d)
				}
			}
		}
	}
	// Longest first, so that a password containing another is replaced whole.
	for i := 1; i < len(r.secrets); i++ {
		for j := i; j > 0 && len(r.secrets[j]) > len(r.secrets[j-1]); j-- {
			r.secrets[j], r.secrets[j-1] = r.secrets[j-1], r.secrets[j]
		}
	}
	return r
}

// String returns s with the user information of every URL in it replaced
// ("user:xxxxx@", or "xxxxx@" for the password-only form) and every known
// password replaced wherever it appears. A nil redactor knows no password
// and hides only the user information of URLs.
func (r *redactor) String(s string) string {
	re := regexp.MustCompile(userinfoPattern)
	if r != nil {
		re = r.userinfo
	}
	s = re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		user, _, hasPass := strings.Cut(sub[2], ":")
		if hasPass && user != "" {
			return sub[1] + user + ":" + redacted + "@"
		}
		return sub[1] + redacted + "@"
	})
	if r != nil {
		for _, sec := range r.secrets {
			s = strings.ReplaceAll(s, sec, redacted)
		}
	}
	return s
}

// redactWriter writes through a redactor to w. A password split across
// two writes would escape it; dlm writes whole lines and messages.
type redactWriter struct {
	w io.Writer
	r *redactor
}

func (rw *redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(rw.w, rw.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rawWriter returns the writer under a redactWriter: for the output of the
// command dlm lock runs, and to ask whether the output is a terminal.
func rawWriter(w io.Writer) io.Writer {
	if rw, ok := w.(*redactWriter); ok {
		return rw.w
	}
	return w
}
