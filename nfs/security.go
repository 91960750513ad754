package nfs

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// AuthSysWarning is what a server listening beyond loopback says at
// startup: the uid in an NFSv3 call is whatever the client claims.
const AuthSysWarning = "warning: NFSv3 AUTH_SYS is not authentication: any host that can reach " +
	"this port can claim any uid (--allow-uid only filters honest clients) and read the whole export"

// CheckListenAddr refuses a listen address that is not loopback unless
// allowRemote: NFSv3 with AUTH_SYS trusts whatever uid the client sends,
// so serving beyond the machine must be a deliberate choice. An empty
// host ("", "0.0.0.0", "::") listens on every interface and is refused; a
// host name must resolve to loopback addresses only.
func CheckListenAddr(addr string, allowRemote bool) error {
	if allowRemote {
		return nil
	}
	ok, err := IsLoopbackAddr(addr)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("listen address %s is not loopback: NFSv3 AUTH_SYS is not authentication, "+
			"so anyone who can reach it can read the export as any uid; pass --allow-remote to serve it anyway", addr)
	}
	return nil
}

// IsLoopbackAddr reports whether a host:port listen address only listens
// on loopback.
func IsLoopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "" {
		return false, nil // every interface
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().IsLoopback(), nil
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return false, nil
		}
	}
	return len(ips) > 0, nil
}
