import Foundation
import Glibc

/// Two "machines" joined by netjack2, for tests: two network namespaces joined by a veth pair
/// with a multicast route, a dummy-backend master with the netmanager loaded (`jack_load
/// netmanager -i "-a <multicast>"`) in one, and a slave (`jackd -d net`) in the other, which
/// appears on the master as the client `slaveName` with ports `to_slave_N` and `from_slave_N`.
///
/// Names are unique per test run (other test processes build their own pairs at the same time).
/// `stop()` (or deinit) stops both servers by their pids and deletes both namespaces (which
/// removes the veth pair and any packet-loss rules); a shell watchdog does the same if the test
/// process dies first. Needs root: `NetJackPair.unavailableReason` says why a pair cannot be made.
public final class NetJackPair: @unchecked Sendable {
    public let master: JackServer
    public private(set) var slave: JackServer
    /// The slave's client name on the master (its ports: `<slaveName>:from_slave_1`, …).
    public let slaveName: String
    /// The namespaces of the master and the slave ("hosts"), and their veth interfaces.
    public let masterNamespace: String
    public let slaveNamespace: String
    public let masterInterface: String
    public let slaveInterface: String
    /// The netjack2 network latency (cycles) the slave asked for.
    public let networkLatencyCycles: Int
    private var watchdog: Process?
    private var stopped = false

    /// Builds the network and starts both servers (48 kHz, `periodFrames`); the slave has
    /// `channels` audio ports each way. Throws when a step fails (after undoing the others).
    public init(channels: Int = 2, periodFrames: Int = 256, networkLatencyCycles: Int = 5) throws {
        let serial = NetJackPair.counter.next()
        let tag = "jq\(getpid() % 100_000)n\(serial)"
        masterNamespace = "\(tag)m"
        slaveNamespace = "\(tag)s"
        masterInterface = "\(tag)a"  // interface names: at most 15 bytes
        slaveInterface = "\(tag)b"
        slaveName = "\(tag)sl"
        self.networkLatencyCycles = networkLatencyCycles
        self.periodFrames = periodFrames
        self.channels = channels
        try Self.buildNetwork(subnet: "10.\(100 + Int(getpid() % 100)).\(serial % 250)", master: masterNamespace, slave: slaveNamespace,
                              masterInterface: masterInterface, slaveInterface: slaveInterface)
        watchdog = Self.startWatchdog(namespaces: [masterNamespace, slaveNamespace])
        do {
            master = try JackServer(periodFrames: periodFrames, capture: 2, playback: 2, namespace: masterNamespace, exclusive: false)
        } catch {
            Self.deleteNamespaces([masterNamespace, slaveNamespace])
            throw error
        }
        do {
            let load = try runProcess([try Self.ipCommand(), "netns", "exec", masterNamespace, "jack_load", "-s", master.name,
                                       "netmanager", "-i", "-a \(Self.multicast)"], environment: master.environment, timeout: 20)
            guard load.status == 0 else { throw JackServerError("jack_load netmanager: \(load.output) \(load.error)") }
            slave = try Self.startSlave(namespace: slaveNamespace, name: slaveName, channels: channels,
                                        periodFrames: periodFrames, latency: networkLatencyCycles)
        } catch {
            master.stop()
            Self.deleteNamespaces([masterNamespace, slaveNamespace])
            throw error
        }
    }

    private let periodFrames: Int
    private let channels: Int
    /// The multicast group the master's netmanager listens on (each pair has its own network).
    static let multicast = "225.3.19.154"

    /// The slave: `jackd -d net` in its namespace; up when the master has taken it (its ports exist).
    private static func startSlave(namespace: String, name: String, channels: Int, periodFrames: Int, latency: Int) throws -> JackServer {
        try JackServer(periodFrames: periodFrames, namespace: namespace,
                       driver: ["-d", "net", "-a", multicast, "-C", "\(channels)", "-P", "\(channels)", "-n", name, "-l", "\(latency)"],
                       exclusive: false)
    }

    /// The slave machine leaves (its server stops) and, `seconds` later, comes back under the
    /// same name (the master gives it the same ports again).
    public func restartSlave(after seconds: Double) throws {
        slave.stop(timeout: 20)
        usleep(UInt32(seconds * 1_000_000))
        slave = try Self.startSlave(namespace: slaveNamespace, name: slaveName, channels: channels,
                                    periodFrames: periodFrames, latency: networkLatencyCycles)
    }

    /// Drops `percent` % of the UDP packets each namespace receives (nftables, `numgen random`:
    /// this kernel may have no `netem` qdisc), both ways. Removed with the namespaces.
    public func dropPackets(percent: Int) throws {
        for namespace in [masterNamespace, slaveNamespace] {
            let rules = "table inet jaqloss { chain input { type filter hook input priority 0; "
                + "meta l4proto udp numgen random mod 100 < \(percent) counter drop; }; }"
            let result = try runProcess([try Self.ipCommand(), "netns", "exec", namespace, "nft", rules], timeout: 10)
            guard result.status == 0 else { throw JackServerError("nft in \(namespace): \(result.error)") }
        }
    }

    /// The packets the loss rules dropped so far (both ways).
    public func droppedPackets() -> Int {
        var total = 0
        for namespace in [masterNamespace, slaveNamespace] {
            guard let ip = try? Self.ipCommand(),
                  let list = try? runProcess([ip, "netns", "exec", namespace, "nft", "list", "table", "inet", "jaqloss"], timeout: 10)
            else { continue }
            if let range = list.output.range(of: #"packets (\d+)"#, options: .regularExpression) {
                total += Int(list.output[range].split(separator: " ")[1]) ?? 0
            }
        }
        return total
    }

    /// A command run inside the slave's namespace against the slave's server (as on the other machine).
    public func slaveCommand(_ arguments: [String]) throws -> [String] {
        [try Self.ipCommand(), "netns", "exec", slaveNamespace] + arguments
    }

    /// The master machine goes away: its netmanager is unloaded and its server stops (the
    /// slave's net driver unregisters its ports and waits for a new master).
    public func stopMaster() {
        guard master.process.isRunning else { return }
        // A master that still runs its netmanager takes 8 to 15 s to stop; without it, 2 s.
        _ = try? runProcess(["jack_unload", "netmanager"], environment: master.environment, timeout: 10)
        master.stop(timeout: 20)
    }

    /// Stops both servers (the slave first, so the master has no slave to wait for) and deletes
    /// the namespaces.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        slave.stop(timeout: 20)
        stopMaster()
        Self.deleteNamespaces([masterNamespace, slaveNamespace])
        if let dog = watchdog, dog.isRunning {
            kill(dog.processIdentifier, SIGKILL)
            dog.waitUntilExit()
        }
    }

    deinit { stop() }

    // MARK: - Availability and the network

    /// Why no pair can be made here (not root, no `ip`, `nft` or namespaces), or nil when it can.
    /// Probed once per process by creating and deleting a namespace.
    public static let unavailableReason: String? = {
        guard getuid() == 0 else { return "netjack2 tests need root (ip netns add, veth): run them as root" }
        guard let ip = try? ipCommand() else { return "netjack2 tests need iproute2's ip (apt-get install iproute2)" }
        guard ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"].contains(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { return "netjack2 tests need nft (apt-get install nftables)" }
        guard FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/jack/netmanager.so")
                || FileManager.default.fileExists(atPath: "/usr/lib/jack/netmanager.so")
                || (try? runProcess(["sh", "-c", "ls /usr/lib/*/jack/netmanager.so"]))?.status == 0
        else { return "netjack2 tests need jackd2's netmanager (apt-get install jackd2)" }
        let probe = "jqprobe\(getpid() % 100_000)"
        guard let made = try? runProcess([ip, "netns", "add", probe], timeout: 10), made.status == 0 else {
            return "network namespaces cannot be made here (ip netns add failed)"
        }
        _ = try? runProcess([ip, "netns", "del", probe], timeout: 10)
        return nil
    }()

    static func ipCommand() throws -> String {
        guard let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { throw JackServerError("ip (iproute2) is not installed") }
        return ip
    }

    /// Two namespaces, a veth pair between them (10.x.y.1 and .2), loopback up, multicast routed to the veth.
    private static func buildNetwork(subnet: String, master: String, slave: String, masterInterface: String, slaveInterface: String) throws {
        let ip = try ipCommand()
        let steps: [[String]] = [
            ["netns", "add", master], ["netns", "add", slave],
            ["link", "add", masterInterface, "type", "veth", "peer", "name", slaveInterface],
            ["link", "set", masterInterface, "netns", master], ["link", "set", slaveInterface, "netns", slave],
            ["-n", master, "addr", "add", "\(subnet).1/24", "dev", masterInterface],
            ["-n", slave, "addr", "add", "\(subnet).2/24", "dev", slaveInterface],
            ["-n", master, "link", "set", "lo", "up"], ["-n", slave, "link", "set", "lo", "up"],
            ["-n", master, "link", "set", masterInterface, "up", "multicast", "on"],
            ["-n", slave, "link", "set", slaveInterface, "up", "multicast", "on"],
            ["-n", master, "route", "add", "224.0.0.0/4", "dev", masterInterface],
            ["-n", slave, "route", "add", "224.0.0.0/4", "dev", slaveInterface],
        ]
        for step in steps {
            let result = try runProcess([ip] + step, timeout: 10)
            guard result.status == 0 else {
                deleteNamespaces([master, slave])
                _ = try? runProcess([ip, "link", "del", masterInterface], timeout: 10)
                throw JackServerError("ip \(step.joined(separator: " ")): \(result.error.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
        }
    }

    private static func deleteNamespaces(_ namespaces: [String]) {
        guard let ip = try? ipCommand() else { return }
        for namespace in namespaces { _ = try? runProcess([ip, "netns", "del", namespace], timeout: 10) }
    }

    /// Deletes the namespaces when this test process is gone (a crash, SIGKILL).
    private static func startWatchdog(namespaces: [String]) -> Process? {
        guard let ip = try? ipCommand() else { return nil }
        let dog = Process()
        dog.executableURL = URL(fileURLWithPath: "/bin/sh")
        dog.arguments = ["-c", "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; sleep 4; "
                         + namespaces.map { "\(ip) netns del \($0) 2>/dev/null; " }.joined() + "exit 0"]
        dog.standardInput = FileHandle.nullDevice
        dog.standardOutput = FileHandle.nullDevice
        dog.standardError = FileHandle.nullDevice
        return (try? dog.run()) != nil ? dog : nil
    }

    private static let counter = JackServer.Counter()
}
