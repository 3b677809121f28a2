package hostallow

import (
	"fmt"
	"net/netip"
	"strings"
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

// Classify says what kind of non-public address ip is ("a loopback
// address"), or "" for a public one.
func Classify(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, n := range refusedNets {
		if n.prefix.Contains(ip) {
			return n.what
		}
	}
	return ""
}

// List is what WebFetch may reach besides public addresses: the
// allowed_hosts of the fetch toolset. Its zero value adds nothing.
type List struct {
	names map[string]bool // lower case, without a trailing dot
	nets  []netip.Prefix
}

// Parse reads allowed_hosts entries (see Check); the error names the
// first entry that is not one.
func Parse(entries []string) (List, error) {
	var a List
	for _, e := range entries {
		name, prefix, err := parseAllowed(e)
		switch {
		case err != nil:
			return List{}, err
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

// Check reports what is wrong with one allowed_hosts entry:
// a host name (localhost, wiki.internal: any address it resolves to is
// allowed), an IP address (127.0.0.1, ::1) or a network in CIDR notation
// (10.0.0.0/8, fd00::/8: every address in it is allowed, whatever name
// leads there).
func Check(entry string) error {
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

// AllowsName reports whether host (as in a URL) is an allowed name.
func (a List) AllowsName(host string) bool {
	return a.names[strings.TrimSuffix(strings.ToLower(host), ".")]
}

// AllowsAddr reports whether ip is in an allowed network.
func (a List) AllowsAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.nets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
