package webfetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// refusedNets are the addresses WebFetch does not connect to unless they
// are allowed: what is not the public internet. IPv4-mapped IPv6
// addresses (::ffff:a.b.c.d) are judged as their IPv4 address.
var refusedNets = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "a broadcast address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("fc00::/7"), "a private (unique local) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// classifyAddr says what kind of non-public address ip is, or "" for a
// public one.
func classifyAddr(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, n := range refusedNets {
		if n.prefix.Contains(ip) {
			return n.what
		}
	}
	return ""
}

// AllowList is what WebFetch may reach besides public addresses: the
// allowed_hosts of the fetch toolset. Its zero value adds nothing.
type AllowList struct {
	names map[string]bool // lower case, without a trailing dot
	nets  []netip.Prefix
}

// ParseAllowList reads allowed_hosts entries (see CheckAllowedHost); the
// error names the first entry that is not one.
func ParseAllowList(entries []string) (AllowList, error) {
	var a AllowList
	for _, e := range entries {
		name, prefix, err := parseAllowed(e)
		switch {
		case err != nil:
			return AllowList{}, err
		case name != "":
			if a.names == nil {
				a.names = map[string]bool{}
			}
			a.names[name] = true
		default:
			a.nets = append(a.nets, prefix)
		}
	}
	return a, nil
}

// CheckAllowedHost reports what is wrong with one allowed_hosts entry:
// a host name (localhost, wiki.internal: any address it resolves to is
// allowed), an IP address (127.0.0.1, ::1) or a network in CIDR notation
// (10.0.0.0/8, fd00::/8: every address in it is allowed, whatever name
// leads there).
func CheckAllowedHost(entry string) error {
	_, _, err := parseAllowed(entry)
	return err
}

// allowedForms says what an allowed_hosts entry may be.
const allowedForms = "a host name (localhost), an IP address (127.0.0.1) or a CIDR network (10.0.0.0/8), without scheme, port or path"

func parseAllowed(entry string) (name string, prefix netip.Prefix, err error) {
	s := strings.TrimSpace(entry)
	if strings.Contains(s, "://") {
		return "", netip.Prefix{}, fmt.Errorf("%q is a URL; write %s", entry, allowedForms)
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return "", netip.Prefix{}, fmt.Errorf("%q is not a CIDR network: %v", entry, err)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		return "", p.Masked(), nil
	}
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		ip = ip.Unmap().WithZone("")
		return "", netip.PrefixFrom(ip, ip.BitLen()), nil
	}
	name = strings.TrimSuffix(strings.ToLower(s), ".")
	if !validHostName(name) {
		return "", netip.Prefix{}, fmt.Errorf("%q is not %s (wildcards are not supported)", entry, allowedForms)
	}
	return name, netip.Prefix{}, nil
}

// validHostName reports whether s is a DNS name: dot-separated labels of
// letters, digits, '-' and '_', none empty or longer than 63.
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

// allowsName reports whether host (as in a URL) is an allowed name.
func (a AllowList) allowsName(host string) bool {
	return a.names[strings.TrimSuffix(strings.ToLower(host), ".")]
}

// allowsAddr reports whether ip is in an allowed network.
func (a AllowList) allowsAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.nets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// refusedError is a connection WebFetch did not make.
type refusedError struct {
	host string // as in the URL; "" when not known
	ip   netip.Addr
	what string // the kind of address: "a loopback address"
}

func (e *refusedError) Error() string {
	if e.host == "" {
		return fmt.Sprintf("%s is %s", e.ip, e.what)
	}
	if _, err := netip.ParseAddr(e.host); err == nil {
		return fmt.Sprintf("%s is %s", e.host, e.what)
	}
	return fmt.Sprintf("%s resolves to %s, %s", e.host, e.ip, e.what)
}

// checkAddress is the dialer's Control: it runs for every address the
// dialer is about to connect to (each DNS answer, every redirect), after
// the name was resolved, so what it lets through is what is connected to.
func (a AllowList) checkAddress(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to connect to %q: not an IP address and port", address)
	}
	ip := ap.Addr().Unmap().WithZone("")
	if what := classifyAddr(ip); what != "" && !a.allowsAddr(ip) {
		return &refusedError{ip: ip, what: what}
	}
	return nil
}

// dialContext connects to addr (host:port from the URL): without any check
// to an allowed host name, else through a dialer that refuses non-public
// addresses outside the allowed networks.
func (a AllowList) dialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	guarded := *d
	guarded.Control = a.checkAddress
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if a.allowsName(host) {
			return d.DialContext(ctx, network, addr)
		}
		conn, err := guarded.DialContext(ctx, network, addr)
		var refused *refusedError
		if errors.As(err, &refused) {
			refused.host = host
		}
		return conn, err
	}
}

// errTransport is why a client whose Transport is not an *http.Transport
// cannot be used: the address check lives in the transport's dialer.
var errTransport = errors.New("WebFetch needs a client whose Transport is an *http.Transport (or nil), to check the addresses it connects to")

// guardedTransport returns a copy of base (nil: http.DefaultTransport)
// that connects only where allow permits, and never through a proxy: a
// proxy from the environment (HTTP_PROXY, HTTPS_PROXY) would connect for
// us, to addresses the dialer never sees.
func guardedTransport(base http.RoundTripper, allow AllowList) (*http.Transport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	bt, ok := base.(*http.Transport)
	if !ok {
		return nil, errTransport
	}
	t := bt.Clone()
	t.Proxy = nil
	t.OnProxyConnectResponse = nil
	//lint:ignore SA1019 the deprecated hooks are cleared so that only DialContext connects
	t.Dial, t.DialTLS = nil, nil
	t.DialTLSContext = nil
	t.DialContext = allow.dialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
	return t, nil
}
