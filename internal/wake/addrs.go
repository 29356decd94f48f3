package wake

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// The addresses a session row advertises (Advert.Addrs) are one string:
// a token of the host, ';', and the addresses, ip:port, separated by
// commas, at most MaxAddrsLen bytes (the addresses that do not fit are
// left out). A loopback address only reaches a process on the same host:
// a sender uses one only when the token is its own host's, so that a
// process on another host is never sent to through its own 127.0.0.1.

// MaxAddrsLen bounds Advert.Addrs: the column holds 255 characters.
const MaxAddrsLen = 255

// hostToken names this host: a hash of its name and, on Linux, its boot
// id. Two hosts that share both (containers of one host given the same
// name) still have their own loopback interface, and a datagram sent to
// the wrong one fails its MAC check there.
func hostToken() string {
	name, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	sum := sha256.Sum256([]byte(name + "\x00" + strings.TrimSpace(string(boot))))
	return hex.EncodeToString(sum[:6])
}

// encodeAddrs renders the addresses of Advert.Addrs.
func encodeAddrs(host string, addrs []netip.AddrPort) string {
	s := host + ";"
	for i, a := range addrs {
		next := a.String()
		if i > 0 {
			next = "," + next
		}
		if len(s)+len(next) > MaxAddrsLen {
			break
		}
		s += next
	}
	return s
}

// decodeAddrs parses Advert.Addrs for a sender on the host whose token is
// host: loopback addresses only when the advert's host is the same. What
// does not parse is skipped.
func decodeAddrs(s, host string) []*net.UDPAddr {
	token, parts := splitAddrs(s)
	var out []*net.UDPAddr
	for _, part := range parts {
		a, err := netip.ParseAddrPort(part)
		if err != nil || a.Port() == 0 || (a.Addr().IsLoopback() && token != host) {
			continue
		}
		out = append(out, net.UDPAddrFromAddrPort(a))
	}
	return out
}

// AdvertAddrs returns the addresses of Advert.Addrs as advertised,
// unparsed, for display; nil for none.
func AdvertAddrs(s string) []string {
	_, parts := splitAddrs(s)
	return parts
}

// splitAddrs splits Advert.Addrs into its host token and its addresses.
func splitAddrs(s string) (host string, addrs []string) {
	host, list, ok := strings.Cut(s, ";")
	if !ok || list == "" {
		return host, nil
	}
	return host, strings.Split(list, ",")
}

// advertised returns the addresses to advertise for a socket bound to
// port at the address listen asked for: the configured ones (each without
// a port takes port), or the bound address when listen names an IP, or
// the host's (HostAddrs).
func advertised(configured []string, listen *net.UDPAddr, port int) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	switch {
	case len(configured) > 0:
		for _, s := range configured {
			a, err := parseAdvertise(s, port)
			if err != nil {
				return nil, fmt.Errorf("peer wake-ups: advertised address %q %w", s, err)
			}
			out = append(out, a)
		}
	case listen != nil && listen.IP != nil && !listen.IP.IsUnspecified():
		ip, _ := netip.AddrFromSlice(listen.IP)
		out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
	default:
		ips, err := HostAddrs()
		if err != nil {
			return nil, fmt.Errorf("peer wake-ups: list the host's addresses: %w", err)
		}
		for _, ip := range ips {
			out = append(out, netip.AddrPortFrom(ip, uint16(port)))
		}
	}
	return out, nil
}

// HostAddrs lists the unicast addresses of the host's interfaces that are
// up, but link-local ones, which need a zone: IPv4 first, then IPv6. The
// loopback addresses are listed only when there is no other.
func HostAddrs() ([]netip.Addr, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var v4, v6, loop []netip.Addr
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(n.IP)
			if !ok {
				continue
			}
			ip = ip.Unmap()
			switch {
			case ip.IsLoopback():
				loop = append(loop, ip)
			case !ip.IsGlobalUnicast():
				// link-local, multicast, unspecified
			case ip.Is4():
				v4 = append(v4, ip)
			default:
				v6 = append(v6, ip)
			}
		}
	}
	if v4 = append(v4, v6...); len(v4) > 0 {
		return v4, nil
	}
	return loop, nil
}

// CheckListen checks a listen address of PeerConfig: host:port, where the
// host is empty or an IP address and the port a number up to 65535.
func CheckListen(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("must be host:port, such as \":0\" or \"10.0.0.5:7946\": %w", err)
	}
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("host %q must be an IP address or empty (every interface)", host)
		}
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return fmt.Errorf("port %q must be a number from 0 to 65535", port)
	}
	return nil
}

// CheckAdvertise checks an address of PeerConfig.Advertise: an IP
// address, or IP:port with a port from 1 to 65535.
func CheckAdvertise(s string) error {
	_, err := parseAdvertise(s, 1)
	return err
}

// errNotUnicast is an advertised address that no datagram can be sent to.
var errNotUnicast = errors.New("must be a unicast IP address without a zone")

// parseAdvertise parses an address of PeerConfig.Advertise, giving one
// without a port the port port.
func parseAdvertise(s string, port int) (netip.AddrPort, error) {
	if ip, err := netip.ParseAddr(s); err == nil {
		if ip.Zone() != "" || ip.IsUnspecified() || ip.IsMulticast() {
			return netip.AddrPort{}, errNotUnicast
		}
		return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
	}
	a, err := netip.ParseAddrPort(s)
	if err != nil || a.Port() == 0 {
		return netip.AddrPort{}, errors.New("must be an IP address, or IP:port with a port from 1 to 65535")
	}
	if a.Addr().Zone() != "" || a.Addr().IsUnspecified() || a.Addr().IsMulticast() {
		return netip.AddrPort{}, errNotUnicast
	}
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()), nil
}
