package redlock

import (
	"errors"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// NodeURL is a parsed node address, as accepted by the adapters' Dial
// functions and the dlm command:
//
//	redis://[user:password@]host[:port][/db]   plain TCP (port 6379 by default)
//	rediss://[user:password@]host[:port][/db]  TLS
//	unix:///path/to/socket[?db=N]              a unix socket
//	redis://host:port?cluster=true[&addr=host:port...]
//	                                           a Redis Cluster as one node
//
// A node that is a Redis Cluster names one master as the seed and, with
// addr parameters, as many others as you like (the rest of the cluster is
// discovered from them): redis://10.0.0.1:7000?cluster=true&addr=10.0.0.2:7000.
// It has no database number (a cluster has only database 0) and no unix
// socket.
//
// The parameters a node URL may have are db, cluster, addr and the TLS
// files the dlm command reads (tls-ca-file, tls-cert-file, tls-key-file);
// any other, or one given twice (addr aside), is refused.
type NodeURL struct {
	// Raw is the URL as given.
	Raw string
	// Network is "tcp" or "unix".
	Network string
	// Addr is host:port for tcp, the socket path for unix.
	Addr string
	// TLS is true for rediss://.
	TLS bool
	// Host is the host name for tcp (for TLS server name checks).
	Host string
	// Username and Password are the ACL credentials, if any.
	Username, Password string
	// DB is the logical database number.
	DB int
	// Cluster is true for a node that is a Redis Cluster (cluster=true).
	Cluster bool
	// Addrs are a cluster's seed addresses: Addr, then each addr
	// parameter; nil for a node that is not a cluster.
	Addrs []string
}

// String returns the node's address without credentials.
func (u NodeURL) String() string {
	if u.Network == "unix" {
		return "unix://" + u.Addr
	}
	if u.Cluster {
		return "cluster:" + u.Addr
	}
	return u.Addr
}

// ParseNodeURL parses and validates one node URL. The error wraps ErrInvalid
// and names what is wrong and what is expected.
func ParseNodeURL(raw string) (NodeURL, error) {
	const expected = "expected redis://[user:password@]host:port[/db], rediss://... or unix:///path"
	shown := RedactURL(raw) // errors never carry a password
	pw, hasPW := URLPassword(raw)
	if hasPW && strings.ContainsAny(pw, "/?#") {
		// The parser would cut the password there and quote its pieces as
		// a port, a database or a query.
		return NodeURL{}, invalidf("node URL %q: the password holds an unencoded \"/\", \"?\" or \"#\"; percent-encode them (%%2F, %%3F, %%23); %s", shown, expected)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL, password included
		}
		if hasPW {
			// The parser's reason may quote a piece of the password.
			return NodeURL{}, invalidf("node URL %q does not parse as a URL (a password must percent-encode \":\", \"/\", \"?\", \"#\", \"@\" and \"%%\"); %s", shown, expected)
		}
		return NodeURL{}, invalidf("node URL %q: %v; %s", shown, err, expected)
	}
	n := NodeURL{Raw: raw}
	if u.User != nil {
		n.Username = u.User.Username()
		n.Password, _ = u.User.Password()
		if _, hasPass := u.User.Password(); !hasPass {
			// redis://password@host is the common short form.
			n.Username, n.Password = "", u.User.Username()
		}
	}
	switch u.Scheme {
	case "redis", "rediss":
		n.Network, n.TLS = "tcp", u.Scheme == "rediss"
		if u.Hostname() == "" {
			return NodeURL{}, invalidf("node URL %q has no host; %s", shown, expected)
		}
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = "6379"
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return NodeURL{}, invalidf("node URL %q: port %q is not a number from 1 to 65535", shown, port)
		}
		n.Host, n.Addr = host, net.JoinHostPort(host, port)
		if db := strings.Trim(u.Path, "/"); db != "" {
			d, err := strconv.Atoi(db)
			if err != nil || d < 0 {
				return NodeURL{}, invalidf("node URL %q: database %q is not a number >= 0", shown, db)
			}
			n.DB = d
		}
	case "unix":
		n.Network = "unix"
		n.Addr = u.Path
		if u.Host != "" {
			return NodeURL{}, invalidf("node URL %q: the socket path must be absolute (unix:///path/to/sock, three slashes), not relative to %q; %s", shown, u.Host, expected)
		}
		if n.Addr == "" {
			return NodeURL{}, invalidf("node URL %q has no socket path; %s", shown, expected)
		}
	case "":
		return NodeURL{}, invalidf("node URL %q has no scheme; %s", shown, expected)
	default:
		return NodeURL{}, invalidf("node URL %q: unknown scheme %q; %s", shown, u.Scheme, expected)
	}
	if err := checkParams(u.Query(), shown); err != nil {
		return NodeURL{}, err
	}
	if db := u.Query().Get("db"); db != "" {
		d, err := strconv.Atoi(db)
		if err != nil || d < 0 {
			return NodeURL{}, invalidf("node URL %q: db=%q is not a number >= 0", shown, db)
		}
		n.DB = d
	}
	if err := n.parseCluster(u.Query(), shown); err != nil {
		return NodeURL{}, err
	}
	return n, nil
}

// urlParams names the parameters a node URL may have: db, cluster and
// addr here, and the TLS files that the dlm command reads (a library
// caller sets TLS on its own client).
const urlParams = "db, cluster, addr, tls-ca-file, tls-cert-file, tls-key-file"

// checkParams refuses a parameter a node URL may not have (a misspelt one
// would be ignored in silence), and one given twice other than addr (which
// of cluster=true&cluster=false holds?). Values are never shown: a
// parameter may be where a password was misplaced.
func checkParams(q url.Values, shown string) error {
	for name, vs := range q {
		switch {
		case !slices.Contains(strings.Split(urlParams, ", "), name):
			return invalidf("node URL %q: unknown parameter %q; a node URL may have %s", shown, name, urlParams)
		case name != "addr" && len(vs) > 1:
			return invalidf("node URL %q: parameter %q given %d times; give it once", shown, name, len(vs))
		}
	}
	return nil
}

// parseCluster reads the cluster and addr parameters of a node URL.
func (n *NodeURL) parseCluster(q url.Values, shown string) error {
	const expected = "expected redis://host:port?cluster=true&addr=host:port&addr=..."
	switch c := q.Get("cluster"); c {
	case "", "false", "0":
		if len(q["addr"]) > 0 {
			return invalidf("node URL %q: addr parameters name more masters of a Redis Cluster; add cluster=true (%s)", shown, expected)
		}
		return nil
	case "true", "1":
	default:
		return invalidf("node URL %q: cluster=%q is not true or false", shown, c)
	}
	switch {
	case n.Network == "unix":
		return invalidf("node URL %q: a Redis Cluster is reached over TCP, not a unix socket (%s)", shown, expected)
	case n.DB != 0:
		return invalidf("node URL %q: a Redis Cluster has only database 0, got %d", shown, n.DB)
	}
	n.Cluster, n.Addrs = true, []string{n.Addr}
	for _, a := range q["addr"] {
		host, port, err := net.SplitHostPort(a)
		p, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
			return invalidf("node URL %q: addr=%q is not host:port with a port from 1 to 65535 (%s)", shown, a, expected)
		}
		n.Addrs = append(n.Addrs, net.JoinHostPort(host, port))
	}
	return nil
}

// ParseNodeURLs parses a list of node URLs, refusing an empty list and
// duplicate addresses (each node must be an independent master, R2).
func ParseNodeURLs(raws []string) ([]NodeURL, error) {
	if len(raws) == 0 {
		return nil, invalidf("no node URLs: Redlock needs independent masters (5 recommended, R7)")
	}
	out := make([]NodeURL, 0, len(raws))
	seen := make(map[string]int, len(raws))
	for i, raw := range raws {
		n, err := ParseNodeURL(raw)
		if err != nil {
			return nil, err
		}
		ids := []string{n.Network + "|" + n.Addr}
		for _, a := range n.Addrs[min(1, len(n.Addrs)):] {
			ids = append(ids, "tcp|"+a) // a cluster's other seeds
		}
		for _, id := range ids {
			if j, dup := seen[id]; dup && j != i {
				return nil, invalidf("duplicate node: %q and %q name the same master; each node must be independent (R2)", redactURL(raws[j]), redactURL(raw))
			}
			seen[id] = i
		}
		out = append(out, n)
	}
	return out, nil
}

// RedactURL returns raw with the password of its user information, if
// any, replaced by "xxxxx" ("user:xxxxx@", or "xxxxx@" for the
// password-only form redis://password@host), for messages and logs. It
// reads raw generously, whether or not it parses as a URL, so that nothing
// that may be a password shows: the user information ends at the last "@"
// (a password may hold an unencoded "/", "?", "#" or "@"), and starts after
// "scheme:" and its slashes (redis://, redis:/, rediss:, unix:), or at the
// start of raw when there is no scheme (user:password@host:6379). The
// values of query parameters that a node URL does not have (urlParams) are
// replaced too: ?password=... is a password put in the wrong place. Text
// without "@" or "?" is returned as it is.
func RedactURL(raw string) string {
	out := raw
	if start, colon, at, ok := userinfo(raw); ok {
		if colon < 0 {
			out = raw[:start] + "xxxxx" + raw[at:]
		} else {
			out = raw[:colon+1] + "xxxxx" + raw[at:]
		}
	}
	return redactQuery(out)
}

// redactQuery replaces the values of the query parameters of raw (after
// its user information is redacted) that are not node URL parameters.
func redactQuery(raw string) string {
	q := strings.IndexByte(raw, '?')
	if q < 0 {
		return raw
	}
	query, rest := raw[q+1:], ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, rest = query[:h], query[h:]
	}
	known := strings.Split(urlParams, ", ")
	pairs := strings.Split(query, "&")
	for i, p := range pairs {
		name, _, hasValue := strings.Cut(p, "=")
		if hasValue && !slices.Contains(known, name) {
			pairs[i] = name + "=xxxxx"
		}
	}
	return raw[:q+1] + strings.Join(pairs, "&") + rest
}

// redactURL is RedactURL, under the name this file's callers had before it
// was exported.
func redactURL(raw string) string { return RedactURL(raw) }

// URLPassword returns the password that RedactURL hides in raw, as written
// (percent-encoded or not), and whether raw has one, so that a caller can
// hide it wherever else it may appear.
func URLPassword(raw string) (string, bool) {
	start, colon, at, ok := userinfo(raw)
	switch {
	case !ok:
		return "", false
	case colon < 0:
		return raw[start:at], at > start
	}
	return raw[colon+1 : at], at > colon+1
}

// userinfo finds the user information of raw as RedactURL reads it: it
// spans raw[start:at], at is the last "@", colon is the first ":" in it
// (-1 for the password-only form). The documentation's own form
// "[user:password@]" is not user information.
func userinfo(raw string) (start, colon, at int, ok bool) {
	at = strings.LastIndexByte(raw, '@')
	if at < 0 {
		return 0, 0, 0, false
	}
	head := raw[:at]
	if c := strings.IndexByte(head, ':'); c >= 0 {
		scheme := strings.ToLower(strings.TrimLeft(head[:c], "\"(<'`"))
		if strings.HasPrefix(head[c:], ":/") || scheme == "redis" || scheme == "rediss" || scheme == "unix" {
			start = c + 1
			for start < at && head[start] == '/' {
				start++
			}
		}
	}
	if strings.HasPrefix(head[start:], "[") && strings.HasPrefix(raw[at+1:], "]") {
		return 0, 0, 0, false
	}
	colon = strings.IndexByte(head[start:], ':')
	if colon >= 0 {
		colon += start
	}
	return start, colon, at, true
}
