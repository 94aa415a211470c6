package acp

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Without a token, Conch's API answers any process of the host on loopback, and an agent's
// command is one: it could answer its own permission requests. FromAgent tells such a
// connection apart: the kernel lists every TCP socket with its inode (/proc/net/tcp), and
// every process started here (an agent or a terminal's command, startGroup) is the
// leader of a tree whose open files name the sockets it holds. A socket no process holds
// any more (its client sent a request and closed) cannot be told and counts as an
// agent's: browsers and scripts wait for their answer.
//
// Limits: where the kernel makes no PID namespace, a command's double-forked child leaves
// the tree and is not recognised; a process the agent has another service start for it
// (ssh to this host, a systemd user unit) is not either. A token closes both.

// leaders are the pids of the groups startGroup started that wait has not reaped.
var leaders = struct {
	sync.Mutex
	pids map[int]struct{}
}{pids: map[int]struct{}{}}

func addLeader(pid int) {
	leaders.Lock()
	defer leaders.Unlock()
	leaders.pids[pid] = struct{}{}
}

func removeLeader(pid int) {
	leaders.Lock()
	defer leaders.Unlock()
	delete(leaders.pids, pid)
}

// FromAgent reports whether the TCP connection from client to server, both addresses of
// this host, was opened by an agent or a command it runs, or is held by no process.
func FromAgent(client, server netip.AddrPort) bool {
	inode, found := socketInode(client, server)
	if !found || inode == 0 {
		return true
	}
	leaders.Lock()
	pids := make([]int, 0, len(leaders.pids))
	for pid := range leaders.pids {
		pids = append(pids, pid)
	}
	leaders.Unlock()
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	seen := map[int]bool{}
	for len(pids) > 0 {
		pid := pids[len(pids)-1]
		pids = pids[:len(pids)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if holds(pid, want) {
			return true
		}
		pids = append(pids, children(pid)...)
	}
	return false
}

// socketInode finds the client's end of the connection in the kernel's socket tables:
// the entry whose local address is client and remote address is server.
func socketInode(client, server netip.AddrPort) (inode uint64, found bool) {
	client = netip.AddrPortFrom(client.Addr().Unmap(), client.Port())
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 {
				continue
			}
			local, ok1 := kernelAddr(fields[1])
			remote, ok2 := kernelAddr(fields[2])
			if ok1 && ok2 && local == client && remote == server {
				n, err := strconv.ParseUint(fields[9], 10, 64)
				f.Close()
				return n, err == nil
			}
		}
		f.Close()
	}
	return 0, false
}

// kernelAddr parses an address of /proc/net/tcp{,6}: the address as 32-bit words, each
// printed in hex in the host's byte order, a colon, and the port in hex.
func kernelAddr(s string) (netip.AddrPort, bool) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexAddr)
	port, perr := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 { // each word back to the order of the network
		binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), true
}

// holds reports whether process pid has the file named want open.
func holds(pid int, want string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if name, err := os.Readlink(dir + fd.Name()); err == nil && name == want {
			return true
		}
	}
	return false
}

// children lists the children of every thread of process pid.
func children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		data, err := os.ReadFile(dir + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
