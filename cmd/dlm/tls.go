package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"syscall"

	rueidisgo "github.com/redis/rueidis"
	"github.com/spf13/cobra"

	goredisclient "github.com/redis/go-redis/v9"

	"dlm/redlock/rueidis"
)

// tlsFiles are the TLS flags of the subcommands that talk to nodes. They
// apply to rediss:// URLs only; server verification stays on (the system's
// roots, or SSL_CERT_FILE / SSL_CERT_DIR, when no CA file is given).
type tlsFiles struct {
	ca, cert, key string
}

// addTLSFlags adds --tls-ca-file, --tls-cert-file and --tls-key-file to cmd.
func addTLSFlags(cmd *cobra.Command, dst *tlsFiles) {
	f := cmd.Flags()
	f.StringVar(&dst.ca, "tls-ca-file", "", "PEM file of the CA that signs the nodes' certificates (rediss:// URLs; default: the system's roots, or $SSL_CERT_FILE)")
	f.StringVar(&dst.cert, "tls-cert-file", "", "PEM client certificate, for nodes that demand one (tls-auth-clients yes); needs --tls-key-file")
	f.StringVar(&dst.key, "tls-key-file", "", "PEM private key of --tls-cert-file (each of the three may also be given per node as a URL parameter: rediss://host:port?tls-ca-file=...&tls-cert-file=...&tls-key-file=...)")
}

// config builds the TLS settings the files describe, nil when none is
// given (the adapters' defaults then apply). A file that cannot be read or
// parsed is bad usage (64).
func (t tlsFiles) config() (*tls.Config, error) {
	if t.ca == "" && t.cert == "" && t.key == "" {
		return nil, nil
	}
	if (t.cert == "") != (t.key == "") {
		return nil, usageErrorf("--tls-cert-file and --tls-key-file go together: give both or neither")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.ca != "" {
		pem, err := os.ReadFile(t.ca)
		if err != nil {
			return nil, usageErrorf("--tls-ca-file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErrorf("--tls-ca-file %s: no PEM certificate in it", t.ca)
		}
		cfg.RootCAs = pool
	}
	if t.cert != "" {
		pair, err := tls.LoadX509KeyPair(t.cert, t.key)
		if err != nil {
			return nil, usageErrorf("--tls-cert-file/--tls-key-file: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// URL parameters of a rediss:// URL that name its TLS files, overriding the
// flags for that node: rediss://host:port?tls-ca-file=ca.pem&tls-cert-file=
// c.pem&tls-key-file=k.pem.
const (
	paramCA   = "tls-ca-file"
	paramCert = "tls-cert-file"
	paramKey  = "tls-key-file"
)

// forURL returns the TLS settings of the node at raw: the flags, each
// overridden by the URL parameter of the same name.
func (t tlsFiles) forURL(raw string) (*tls.Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return t.config() // ParseNodeURL has refused it already
	}
	q := u.Query()
	for param, dst := range map[string]*string{paramCA: &t.ca, paramCert: &t.cert, paramKey: &t.key} {
		if v := q.Get(param); v != "" {
			*dst = v
		}
	}
	return t.config()
}

// forURLs is forURL for every URL, in order.
func (t tlsFiles) forURLs(raws []string) ([]*tls.Config, error) {
	out := make([]*tls.Config, len(raws))
	for i, raw := range raws {
		c, err := t.forURL(raw)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// forServer returns cfg for one server name (nil stays nil).
func forServer(cfg *tls.Config, serverName string) *tls.Config {
	if cfg == nil {
		return nil
	}
	c := cfg.Clone()
	c.ServerName = serverName
	return c
}

// rueidisTLS is the rueidis adapter option that puts cfg on the TLS
// connections of a node (those of rediss:// URLs), keeping the server name
// the adapter set.
func rueidisTLS(cfg *tls.Config) rueidis.Option {
	return func(o *rueidisgo.ClientOption) {
		if cfg != nil && o.TLSConfig != nil {
			o.TLSConfig = forServer(cfg, o.TLSConfig.ServerName)
		}
	}
}

// goredisTLS puts cfg on the TLS connections of a go-redis client made by
// the goredis adapter (rediss:// URLs), before its first use: its dialer
// reads the options when it dials.
func goredisTLS(c *goredisclient.Client, cfg *tls.Config) *goredisclient.Client {
	if o := c.Options(); cfg != nil && o.TLSConfig != nil {
		o.TLSConfig = forServer(cfg, o.TLSConfig.ServerName)
	}
	return c
}

// tlsHint says what to do about a TLS failure, or "" for other errors:
// a server that demands a client certificate (Redis's default
// tls-auth-clients yes) only resets the connection or sends the alert
// "certificate required".
func tlsHint(err error) string {
	var alert tls.AlertError
	var unknownCA x509.UnknownAuthorityError
	var rec tls.RecordHeaderError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &alert) && alert == alertCertificateRequired, remoteAlert(err) == alertCertificateRequired,
		errors.Is(err, syscall.ECONNRESET):
		return "the server may demand a client certificate (tls-auth-clients yes): give --tls-cert-file and --tls-key-file"
	case errors.As(err, &unknownCA):
		return "the node's certificate is signed by an authority not trusted here: give --tls-ca-file (or set SSL_CERT_FILE)"
	case errors.As(err, &rec):
		return "the node does not speak TLS on this port: use redis:// for a plain port, rediss:// for its tls-port"
	}
	return ""
}

// alertCertificateRequired is TLS alert 116 (RFC 8446): the server wants a
// client certificate.
const alertCertificateRequired = 116

// remoteAlert returns the code of a TLS alert the server sent, as crypto/tls
// reports it over TCP (a *net.OpError with Op "remote error" around its
// unexported alert type, a uint8), or -1.
func remoteAlert(err error) int {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" || op.Err == nil {
		return -1
	}
	if v := reflect.ValueOf(op.Err); v.Kind() == reflect.Uint8 {
		return int(v.Uint())
	}
	return -1
}

// withTLSHint appends tlsHint's advice to err's text, keeping err.
func withTLSHint(err error) error {
	if h := tlsHint(err); h != "" {
		return &reasonError{msg: fmt.Sprintf("%v (%s)", err, h), err: err}
	}
	return err
}
