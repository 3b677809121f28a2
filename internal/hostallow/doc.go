// Package hostallow reads the allowed_hosts of the fetch toolset: host
// names, IP addresses and CIDR networks that WebFetch may reach although
// they are not public addresses, and says which addresses are not public.
//
// It is a leaf (standard library only, no net/http) so that the manifest
// parser and the pool can check allowed_hosts entries without depending on
// the fetch tool's HTTP client; tool/webfetch enforces the list.
package hostallow
