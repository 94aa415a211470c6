package acp

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"conch/server/egress"
	"conch/shared"
)

// Every agent, and every command it runs, lives in the sandbox of its session: it may
// read and change the session's directory, the task's additional directories, a private
// HOME (which holds its TMPDIR) and what its profile adds (sandbox.write); it may read the
// system (sandboxRead, /etc less its secrets) and what the profile adds (sandbox.read);
// nothing else of the host. Not the server's data directory (the database), not other
// tasks' directories, not the server's home nor anyone else's, not /tmp.
//
// The mechanism is Landlock (go-landlock), which the kernel applies to a process and
// everything it starts, for good: the namespace's first process (ns-init, nsinit.go)
// confines itself before it starts the command. Landlock works for any user, root too,
// needs no setuid helper and no mount namespace, and it also stops ptrace and /proc
// access (/proc/PID/root, mem, environ, fd) to processes outside the sandbox, and from
// ABI 6 on, signals and abstract unix sockets to them. The network is a namespace's
// affair: network none and hosts give the sandbox a network namespace of its own with
// only a loopback, and hosts then reaches the listed hosts through an egress proxy
// (server/egress) that ns-init relays to on the socket the server gave it.
//
// What this kernel's Landlock cannot yet stop (ABI 7 here): connect(2) to a unix socket
// by its path, which ABI 9 restricts (go-landlock applies it where the kernel has it).
// A profile's network none does not stop that either.

// sandboxRead are the system's directories a sandbox may read (and run programs from);
// those missing here are skipped. /etc is read entry by entry (etcSecrets).
var sandboxRead = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys", "/dev"}

// etcSecrets are the entries of /etc a sandbox may not read, even as root: password
// hashes, host keys, sudo's rules, private TLS keys.
var etcSecrets = []string{"shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "sudoers.d", "ssh", "ssl/private",
	"security/opasswd", "credstore", "credstore.encrypted"}

// sandboxDevices may be written, and ioctl'd (a terminal's size), in a sandbox.
var sandboxDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}
var sandboxDeviceDirs = []string{"/dev/pts", "/dev/shm"}

// sandboxSpec is what ns-init confines a command to: its --sandbox argument.
type sandboxSpec struct {
	Write     []string `json:"write"`      // directories, read-write
	ReadDirs  []string `json:"read_dirs"`  // directories, read-only
	ReadFiles []string `json:"read_files"` // files, read-only (and executable)
	Network   string   `json:"network"`    // shared.NetworkAll, NetworkNone or NetworkHosts
}

// Box is the sandbox of a session's processes: what ns-init confines them to, the
// environment they get and, for network hosts, the hosts the egress proxy lets through.
// The box of a server run with --no-sandbox (unconfined) confines nothing.
type Box struct {
	off   bool
	spec  sandboxSpec
	env   []string
	hosts []string
	info  shared.Sandbox
	log   *slog.Logger // the session's, for the egress proxy
}

// unconfined is the box of p's agent on a server run with --no-sandbox: the server's
// environment less its token, with the profile's env.
func unconfined(p Profile) *Box {
	env := childEnv()
	for k, v := range p.Env {
		env = append(env, k+"="+v)
	}
	return &Box{off: true, env: env, info: shared.Sandbox{Off: true, Network: shared.NetworkAll}}
}

// SandboxConfig is a profile's sandbox: what its agent may see besides the task's
// directories and the system, and its network.
type SandboxConfig struct {
	Read  []string `json:"read,omitempty"`  // more paths it may read (a toolchain, a cache)
	Write []string `json:"write,omitempty"` // more paths it may read and change (~/.npm)
	// Network is "all" (the default), "none", or a list of host names ("*.example.com"
	// for its subdomains) reached through Conch's egress proxy.
	Network Network `json:"network,omitzero"`
}

// Network is a profile's network policy: a word or a list of hosts.
type Network struct {
	Policy string   // shared.NetworkAll, NetworkNone or NetworkHosts
	Hosts  []string // for NetworkHosts
}

func (n *Network) UnmarshalJSON(data []byte) error {
	var word string
	if json.Unmarshal(data, &word) == nil {
		if word != shared.NetworkAll && word != shared.NetworkNone {
			return fmt.Errorf("sandbox.network must be %q, %q or a list of host names, not %q", shared.NetworkAll, shared.NetworkNone, word)
		}
		*n = Network{Policy: word}
		return nil
	}
	var hosts []string
	if err := json.Unmarshal(data, &hosts); err != nil || len(hosts) == 0 {
		return errors.New("sandbox.network must be \"all\", \"none\" or a non-empty list of host names")
	}
	for _, h := range hosts {
		name := strings.TrimPrefix(h, "*.")
		if name == "" || strings.ContainsAny(name, "*/:@ \t") || strings.HasPrefix(name, ".") {
			return fmt.Errorf("sandbox.network: %q is not a host name (a name, or *.name for its subdomains)", h)
		}
	}
	*n = Network{Policy: shared.NetworkHosts, Hosts: hosts}
	return nil
}

func (n Network) MarshalJSON() ([]byte, error) {
	if n.Policy == shared.NetworkHosts {
		return json.Marshal(n.Hosts)
	}
	return json.Marshal(n.Policy)
}

func (n Network) IsZero() bool { return n.Policy == "" && n.Hosts == nil }

// check makes a profile's paths absolute (~/ is the server's home) and clean.
func (c *SandboxConfig) check() error {
	home, _ := os.UserHomeDir()
	for _, list := range []*[]string{&c.Read, &c.Write} {
		for i, p := range *list {
			if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
				p = filepath.Join(home, rest)
			}
			if !filepath.IsAbs(p) {
				return fmt.Errorf("sandbox path %q must be absolute or start with ~/", (*list)[i])
			}
			(*list)[i] = filepath.Clean(p)
		}
	}
	return nil
}

// baseEnv are the variables of the server's environment every sandbox gets; a profile
// adds its env and pass_env.
var baseEnv = []string{"PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TERM", "USER", "LOGNAME"}

// newBox makes the sandbox of a session of profile p in dir with the task's additional
// directories and worktree (tree, "" without), and its private home under dataDir. exe is
// the conch binary.
func newBox(p Profile, sessionID, dir string, dirs []string, tree, dataDir, exe string) (*Box, error) {
	private := filepath.Join(dataDir, "sandboxes", sessionID)
	home, tmp := filepath.Join(private, "home"), filepath.Join(private, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	sysDirs, sysFiles, err := systemPaths()
	if err != nil {
		return nil, err
	}
	cfg := p.Sandbox
	network := cmp.Or(cfg.Network.Policy, shared.NetworkAll)
	b := &Box{hosts: cfg.Network.Hosts}
	b.spec.Network = network
	b.spec.Write = slices.Concat([]string{dir}, dirs, []string{private}, cfg.Write)
	b.spec.ReadDirs = slices.Clone(sysDirs)
	b.spec.ReadFiles = append(slices.Clone(sysFiles), exe)
	gitWrite, gitRead := gitParts(tree)
	b.spec.Write = append(b.spec.Write, gitWrite...)
	for _, r := range slices.Concat(cfg.Read, gitRead) {
		if fi, err := os.Stat(r); err == nil && !fi.IsDir() {
			b.spec.ReadFiles = append(b.spec.ReadFiles, r)
		} else {
			b.spec.ReadDirs = append(b.spec.ReadDirs, r) // a missing one is skipped by ns-init
		}
	}
	if p.Command != "" { // the agent's program, wherever it is
		if path, err := exec.LookPath(p.Command); err == nil {
			if real, err := filepath.EvalSymlinks(path); err == nil {
				b.spec.ReadFiles = append(b.spec.ReadFiles, real)
			}
		}
	}
	for _, name := range slices.Concat(baseEnv, p.PassEnv) {
		if v, ok := os.LookupEnv(name); ok {
			b.env = append(b.env, name+"="+v)
		}
	}
	for k, v := range p.Env {
		b.env = append(b.env, k+"="+v)
	}
	b.env = append(b.env, "HOME="+home, "TMPDIR="+tmp)
	b.info = shared.Sandbox{Dirs: append(append([]string{dir}, dirs...), cfg.Write...), Read: cfg.Read, Home: home,
		Network: network, Hosts: cfg.Network.Hosts}
	return b, nil
}

// gitParts are the parts of a worktree's repository that git needs to work in it (commit,
// branch, log): its objects, refs and logs and the worktree's own admin directory
// read-write, its config, HEAD, packed refs and info (exclude) read-only. Not the repository's git
// directory as a whole: it holds the other tasks' worktrees (worktree.Dir). So an agent
// reads the repository's history and can move its refs, as any user of its worktree can.
// tree is the task's worktree, <git dir>/conch-worktrees/<name>, as the server made it.
func gitParts(tree string) (write, read []string) {
	if tree == "" || filepath.Base(filepath.Dir(tree)) != "conch-worktrees" {
		return nil, nil
	}
	common := filepath.Dir(filepath.Dir(tree))
	for _, d := range []string{"objects", "refs", "logs", filepath.Join("worktrees", filepath.Base(tree))} {
		write = append(write, filepath.Join(common, d))
	}
	for _, f := range []string{"config", "HEAD", "packed-refs", "info"} {
		read = append(read, filepath.Join(common, f))
	}
	return write, read
}

// system is what every sandbox may read of the host, found once.
var system struct {
	once  sync.Once
	dirs  []string
	files []string
	err   error
}

// systemPaths lists sandboxRead that exist and /etc entry by entry, less etcSecrets, and
// the file /etc/resolv.conf links to (often under /run, which a sandbox may not read).
func systemPaths() (dirs, files []string, err error) {
	system.once.Do(func() {
		for _, d := range sandboxRead {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				system.dirs = append(system.dirs, d)
			}
		}
		var walk func(dir, rel string) error
		walk = func(dir, rel string) error {
			entries, err := os.ReadDir(dir)
			if err != nil {
				return err
			}
			for _, e := range entries {
				name := filepath.Join(rel, e.Name())
				if slices.Contains(etcSecrets, name) {
					continue
				}
				path := filepath.Join(dir, e.Name())
				fi, err := os.Stat(path) // through a link: the rule is on what it names
				if err != nil {
					continue // a dangling link
				}
				holds := slices.ContainsFunc(etcSecrets, func(s string) bool { return strings.HasPrefix(s, name+"/") })
				switch {
				case fi.IsDir() && holds:
					if err := walk(path, name); err != nil {
						return err
					}
				case fi.IsDir():
					system.dirs = append(system.dirs, path)
				default:
					system.files = append(system.files, path)
				}
			}
			return nil
		}
		if err := walk("/etc", ""); err != nil {
			system.err = fmt.Errorf("sandbox: read /etc: %w", err)
		}
		if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !strings.HasPrefix(real, "/etc/") {
			system.files = append(system.files, real)
		}
	})
	return system.dirs, system.files, system.err
}

// args are ns-init's arguments for s.
func (s sandboxSpec) args() []string {
	data, _ := json.Marshal(s)
	return []string{"--sandbox", string(data)}
}

// confine is ns-init's part: it confines itself, and so the command it starts, to spec.
func confine(spec sandboxSpec) error {
	if spec.Network != shared.NetworkAll {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("sandbox: bring up the loopback: %w", err)
		}
	}
	if landlockABI() < 1 {
		return errors.New("sandbox: the kernel has no Landlock")
	}
	// Files and scopes; the network is the namespace's affair (Landlock restricts TCP ports only).
	cfg := landlock.Config{HandledAccessFS: landlock.V9.HandledAccessFS, Scoped: landlock.V9.Scoped}.BestEffort()
	fd, flags, err := cfg.NewRulesetFD(
		landlock.RWDirs(spec.Write...).IgnoreIfMissing(),
		landlock.RODirs(spec.ReadDirs...).IgnoreIfMissing(),
		landlock.ROFiles(spec.ReadFiles...).IgnoreIfMissing(),
		landlock.RWFiles(sandboxDevices...).WithIoctlDev().IgnoreIfMissing(), // a terminal's size, openpty(3)
		landlock.RWDirs(sandboxDeviceDirs...).WithIoctlDev().IgnoreIfMissing(),
	)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer unix.Close(fd)
	// Only this thread is confined (go-landlock's way for every thread hangs in a PID
	// namespace's init), and it stays the caller's: the command it starts inherits it.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
	}
	return nil
}

// loopbackUp brings up lo, the only interface of a new network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// egressFD is where ns-init of a sandbox with network hosts finds its end of the egress
// proxy's control socket (egress.Pair).
const egressFD = 4

// proxyVars are the variables that send a program's HTTPS through a proxy.
var proxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}

// sandboxed confines ns-init to spec (nil: no sandbox) and returns the environment of its
// command (nil: ns-init's own): with network hosts, the address of the relay to the egress
// proxy, which it starts on the namespace's own loopback.
func sandboxed(spec *sandboxSpec) ([]string, error) {
	if spec == nil {
		return nil, nil
	}
	if err := confine(*spec); err != nil {
		return nil, err
	}
	if spec.Network != shared.NetworkHosts {
		return nil, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sandbox: egress relay: %w", err)
	}
	go func() { _ = egress.Relay(os.NewFile(egressFD, "egress"), ln) }() // it ends with the namespace
	env := os.Environ()
	for _, k := range proxyVars {
		env = append(env, k+"=http://"+ln.Addr().String())
	}
	return append(env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1"), nil
}

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// decodeSpec reads ns-init's --sandbox argument.
func decodeSpec(arg string) (sandboxSpec, error) {
	var spec sandboxSpec
	dec := json.NewDecoder(strings.NewReader(arg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("sandbox: %w", err)
	}
	return spec, nil
}

// sandboxing is whether this server can make sandboxes, found once (sandboxReady).
var sandboxing struct {
	once sync.Once
	err  error
}

// sandboxReady says whether commands can be sandboxed here: nil, or why not. The first
// call starts one ns-init in a sandbox of network none (so a network namespace too), which
// confines itself and exits.
func sandboxReady(initExe string) error {
	sandboxing.once.Do(func() {
		attr := isolate(initExe)
		if attr == nil {
			sandboxing.err = errors.New("the kernel makes no PID namespace here")
			return
		}
		dirs, files, err := systemPaths()
		if err != nil {
			sandboxing.err = err
			return
		}
		spec := sandboxSpec{ReadDirs: dirs, ReadFiles: files, Network: shared.NetworkNone}
		probe := exec.Command(initExe, append(append([]string{NamespaceInitArg}, spec.args()...), "--probe")...)
		attr.Cloneflags |= syscall.CLONE_NEWNET
		probe.SysProcAttr = attr
		if out, err := probe.CombinedOutput(); err != nil {
			sandboxing.err = fmt.Errorf("%s (%w)", strings.TrimSpace(string(out)), err)
		}
	})
	if sandboxing.err != nil {
		return fmt.Errorf("agents run in a sandbox, and this server cannot make one: %w; start it with --no-sandbox to run agents unconfined (docs/SECURITY.md)", sandboxing.err)
	}
	return nil
}

// SandboxState says how this server confines agents, for the log and /healthz: the
// Landlock ABI it uses, or why it cannot. initExe is the conch binary.
func SandboxState(initExe string) (string, error) {
	if err := sandboxReady(initExe); err != nil {
		return "unavailable", err
	}
	return fmt.Sprintf("landlock ABI %d", landlockABI()), nil
}
