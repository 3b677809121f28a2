package webfetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/agentpool/agentpool/internal/hostallow"
)

// AllowList is what WebFetch may reach besides public addresses: the
// allowed_hosts of the fetch toolset. Its zero value adds nothing.
type AllowList struct {
	list hostallow.List
}

// ParseAllowList reads allowed_hosts entries (see CheckAllowedHost); the
// error names the first entry that is not one.
func ParseAllowList(entries []string) (AllowList, error) {
	l, err := hostallow.Parse(entries)
	if err != nil {
		return AllowList{}, err
	}
	return AllowList{list: l}, nil
}

// CheckAllowedHost reports what is wrong with one allowed_hosts entry:
// a host name (localhost, wiki.internal: any address it resolves to is
// allowed), an IP address (127.0.0.1, ::1) or a network in CIDR notation
// (10.0.0.0/8, fd00::/8: every address in it is allowed, whatever name
// leads there).
func CheckAllowedHost(entry string) error { return hostallow.Check(entry) }

// classifyAddr says what kind of non-public address ip is, or "" for a
// public one.
func classifyAddr(ip netip.Addr) string { return hostallow.Classify(ip) }

func (a AllowList) allowsName(host string) bool   { return a.list.AllowsName(host) }
func (a AllowList) allowsAddr(ip netip.Addr) bool { return a.list.AllowsAddr(ip) }

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
