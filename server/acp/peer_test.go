package acp

import (
	"net"
	"net/netip"
	"testing"
)

// A connection of a process no agent started (this test) is not an agent's; one the kernel
// does not list, or lists held by no process (its client sent and closed), counts as an
// agent's: it cannot be told apart.
func TestFromAgent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client, server := conn.LocalAddr().(*net.TCPAddr).AddrPort(), ln.Addr().(*net.TCPAddr).AddrPort()
	if FromAgent(client, server) {
		t.Error("the test's own connection counted as an agent's")
	}
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	conn.Close() // the client's end is held by no process now
	if !FromAgent(client, server) {
		t.Error("a connection its client closed counted as a person's")
	}
	if !FromAgent(netip.MustParseAddrPort("127.0.0.1:1"), server) {
		t.Error("a connection the kernel does not list counted as a person's")
	}
}

func TestKernelAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80", // v4-mapped, unmapped
		"00000000000000000000000001000000:0016": "[::1]:22",
	} {
		got, ok := kernelAddr(in)
		if !ok || got.String() != want {
			t.Errorf("kernelAddr(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	if _, ok := kernelAddr("zz:1"); ok {
		t.Error("a bad address parsed")
	}
}
