package main

import (
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"dlm/redlock"
)

// The one redaction of credentials. Every byte dlm
// itself writes, to stdout or stderr, goes through a redactWriter made in
// run: errors, log lines, status and doctor rows, the demo's view, the
// benchmark's and the checker's reports. Only the output of the command
// that dlm lock runs is passed on untouched (it is not dlm's to edit, and
// it goes straight to the descriptors).

// redacted replaces a password.
const redacted = "xxxxx"

// maxCommas bounds the commas of a password that newRedactorOf finds
// whole in a list of URLs (more are found piece by piece).
const maxCommas = 16

// redactor hides the passwords of node URLs in text. Its reading of a URL
// is redlock.RedactURL's, the one the library's own errors use: a URL with
// or without a scheme (redis://, redis:/, user:password@host), whose
// password may hold any character, "/", "?", "#" and "@" unencoded.
//
// The helpers other files call: redactor.String (a nil redactor hides
// only the user information of URLs in the text) and redactNode (one node
// URL, for tables and messages that name a node).
type redactor struct {
	// secrets are the passwords found in the node URLs dlm was given, as
	// written, percent-decoded, percent-encoded and as %q quotes them,
	// longest first.
	secrets []string
}

// newRedactor collects the passwords of every URL-like word in args and
// in the environment variable DLM_NODES, whether or not the URL is valid
// (an invalid URL's message quotes it too).
func newRedactor(args []string) *redactor {
	return newRedactorOf(append(append([]string(nil), args...), os.Getenv(nodesEnv)))
}

// newRedactorOf is newRedactor over the given words. A password may hold a
// comma, which splits a list of URLs: every run of consecutive
// comma-separated pieces of a word that ends at the first piece with an
// "@" is read as a URL.
func newRedactorOf(words []string) *redactor {
	r := &redactor{}
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			r.secrets = append(r.secrets, s)
		}
	}
	for _, w := range words {
		if strings.HasPrefix(w, "-") { // --nodes=URL,...
			_, w, _ = strings.Cut(w, "=")
		}
		pieces := strings.Split(w, ",")
		for i := range pieces {
			// A run goes on past a piece only if that piece has no "@":
			// the host of a URL ends a run.
			for j := i + 1; j <= min(len(pieces), i+maxCommas+1) && (j == i+1 || !strings.Contains(pieces[j-2], "@")); j++ {
				cand := strings.Join(pieces[i:j], ",")
				if credentialAt(strings.TrimSpace(cand)) != 0 {
					// No URL with a password: user@example.com, an
					// order such as attack@06:00, a label such as
					// backup@db1:5432.
					continue
				}
				cand = strings.TrimSpace(cand)
				pw, ok := redlock.URLPassword(cand)
				if !ok || !hasScheme(cand) && !hostPort.MatchString(cand[strings.LastIndex(cand, "@")+1:]) {
					continue // tenant:42@eu-west, an order, a value: no node URL
				}
				forms := []string{pw, url.PathEscape(pw), url.QueryEscape(pw)}
				if d, err := url.PathUnescape(pw); err == nil {
					forms = append(forms, d, url.QueryEscape(d))
				}
				for _, f := range forms {
					add(f)
					add(strings.Trim(strconv.Quote(f), `"`))
					for _, part := range strings.Split(f, ",") {
						add(part)
					}
				}
			}
		}
	}
	slices.SortStableFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	return r
}

// urlWord is a word of free text that may be a URL with user information.
var urlWord = regexp.MustCompile(`\S*@[^\s,]*`)

// String returns s with the password of every URL in it replaced
// ("user:xxxxx@", or "xxxxx@" for the password-only form; credentialAt
// says what is read as one) and every known password replaced where it
// stands as a credential (inCredential), never elsewhere: a password that
// is a common word ("true", "ok") leaves that word alone in JSON and
// messages. A nil redactor knows no password and hides only the user
// information of URLs.
func (r *redactor) String(s string) string {
	if r != nil {
		for _, sec := range r.secrets {
			s = replaceCredential(s, sec)
		}
	}
	return urlWord.ReplaceAllStringFunc(s, redactWord)
}

// replaceCredential replaces each occurrence of the password sec in s
// that stands as a credential (inCredential).
func replaceCredential(s, sec string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		k := strings.Index(s[i:], sec)
		if k < 0 {
			break
		}
		k += i
		if j := k + len(sec); inCredential(s, k, j) {
			b.WriteString(s[last:k])
			b.WriteString(redacted)
			last, i = j, j
			continue
		}
		i = k + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// urlScheme finds a URL scheme in a word: what precedes a password cut
// from its "@" (a node list split at a comma in the password).
var urlScheme = regexp.MustCompile(`(?i)(^|[^A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*:/|rediss?:|unix:)`)

// inCredential reports whether s[i:j], a known password, stands where a
// URL's password does, so that replacing it hides a credential and no
// ordinary word: it starts the word or follows ":", "/", "," or an
// opening quote or bracket, and either ends at the "@" of the user
// information, or ends the word of a URL cut after it (at a comma of a
// node list, or a quote): after a scheme (redis://alice:pw,
// "rediss://pw"), after user: without one (alice:pw), or in the port
// that Go's URL parser quotes (invalid port ":pw").
func inCredential(s string, i, j int) bool {
	start := strings.LastIndexFunc(s[:i], unicode.IsSpace) + 1
	var prev byte
	if i > 0 {
		prev = s[i-1]
	}
	if i != start && !strings.ContainsRune(":/,\"'`([{<=", rune(prev)) {
		return false // inside a longer word: "true" in "untrue"
	}
	if j < len(s) && s[j] == '@' {
		return true
	}
	if j < len(s) && !strings.ContainsRune(",\"'`)]}>", rune(s[j])) && !unicode.IsSpace(rune(s[j])) {
		return false // the word goes on: "true" in "trueness", "true." in prose
	}
	word := s[start:i]
	switch {
	case prev != ':' && prev != '/' && prev != ',':
		return false
	case urlScheme.MatchString(word):
		return true
	case strings.HasSuffix(s[:i], `port ":`):
		return true
	case prev == ':':
		// user:password, the user made of a user name's characters and
		// starting the word (after its quotes).
		user := strings.TrimLeft(word[:len(word)-1], "\"'`([{<")
		return user != "" && strings.IndexFunc(user, func(r rune) bool { return !isUserRune(r) }) < 0
	}
	return false
}

// redactWord hides the password of the URL that ends the word w (up to
// its last "@" and the host after it), leaving everything else, and does
// so again in what precedes that URL. A password may hold commas, which
// also separate a list of URLs: the URL is the shortest comma-separated
// tail of w that reads as a credential (credentialAt), and the rest is
// redacted on its own.
func redactWord(w string) string {
	starts := []int{0}
	for i := 0; i < len(w); i++ {
		if w[i] == ',' {
			starts = append(starts, i+1)
		}
	}
	for k := len(starts) - 1; k >= 0; k-- {
		s := starts[k]
		if at := credentialAt(w[s:]); at >= 0 {
			return redactWord(w[:s]) + w[s:s+at] + redactNode(w[s+at:])
		}
	}
	return w // no credential: user@example.com, backup@db1:5432, attack@06:00
}

// credentialAt returns where a URL with a password starts in the word w,
// or -1 when w holds none, so that only credentials are rewritten, never
// a name, a label or an order that merely holds an "@": a URL with a
// scheme (redis://..., redis:/...) whose "@" comes after it, found after
// whatever precedes the scheme (a quote, a JSON key); or, without a
// scheme, user:password@host:port, where user is made of the characters
// of a user name (letters, digits, "-._~%", possibly none) and is
// followed by ":" (after the quotes or brackets that open the word), and
// the "@" by a host and a port. backup@db1:5432 (no password) and
// tenant:42@eu-west (no port) are no credentials; alice:pw@host:6379 is
// one.
func credentialAt(w string) int {
	last := strings.LastIndex(w, "@")
	if last < 0 {
		return -1
	}
	if i := strings.Index(w, ":/"); i >= 0 && i < last {
		start := i
		for start > 0 && isSchemeByte(w[start-1]) {
			start--
		}
		if start < i {
			return start
		}
	}
	start := len(w) - len(strings.TrimLeft(w, `"'([{<`))
	end := strings.IndexFunc(w[start:], func(r rune) bool { return !isUserRune(r) })
	if end >= 0 && w[start+end] == ':' && start+end < last && hostPort.MatchString(w[last+1:]) {
		return start
	}
	return -1
}

// hostPort matches what follows the "@" of a URL without a scheme that is
// read as a credential: a host and a port (then a database, or the
// punctuation that closes the word). Without a port, user:password@host is
// as likely a name with a detail and a place (tenant:42@eu-west,
// gps:51.5@12), and dlm takes no node URL without a scheme: the library
// quotes such a URL redacted already.
var hostPort = regexp.MustCompile(`^(\[[0-9A-Fa-f:.%]*\]|[^\s:/@\[\]"'()<>{}]+):[0-9]+(/[0-9]*)?["'()\[\]{}<>.,;:]*$`)

// hasScheme reports whether the word w starts with a URL scheme as node
// URLs are read (redis:, rediss:, unix:, or any scheme followed by ":/").
func hasScheme(w string) bool {
	scheme, rest, ok := strings.Cut(strings.TrimLeft(w, "\"(<'`"), ":")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "redis", "rediss", "unix":
		return true
	}
	return strings.HasPrefix(rest, "/") && strings.IndexFunc(scheme, func(r rune) bool { return r > 0x7f || !isSchemeByte(byte(r)) }) < 0
}

// isSchemeByte reports whether b may be part of a URL scheme.
func isSchemeByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '+' || b == '-' || b == '.'
}

// isUserRune reports whether r may be part of the user name of a URL's
// user information, as dlm reads one.
func isUserRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~%", r)
}

// redactNode returns a node URL (or any text read as one) without its
// password: redlock.RedactURL.
func redactNode(raw string) string { return redlock.RedactURL(raw) }

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
