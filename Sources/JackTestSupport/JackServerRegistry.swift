import Foundation
import Glibc

/// jackd's registry of running servers (`/dev/shm/jack-shm-registry`, jack2's `shm.h`): eight
/// slots, each a pid and a server name. A server that dies without unregistering (SIGKILL, a
/// crash) keeps its slot, and jackd reclaims a dead slot only for a server of the same name:
/// test servers have unique names, so after eight such deaths on a machine every new jackd
/// fails with "Too many servers already active". Tests reclaim the dead slots before they start one.
public enum JackServerRegistry {
    static let path = "/dev/shm/jack-shm-registry"
    /// jack_shm_header_t: magic, protocol, type, size, hdr_len, entry_len (24 bytes), then
    /// MAX_SERVERS (8) entries of a pid_t and a 257-byte name, padded to 264 bytes.
    static let firstSlot = 24
    static let slotSize = 264
    static let slotCount = 8
    static let magic: UInt32 = 0x4a41434b

    /// Removes the client semaphores (`/dev/shm/jack_sem.<uid>_jaqtest-<pid>-<n>_<client>`) that
    /// test servers of test processes no longer running left behind (a killed run's clients). A
    /// server named like one of them would open those files again, with what they still count,
    /// and its client of that name would never run a cycle. Returns how many were removed.
    @discardableResult
    public static func removeDeadTestSemaphores() -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm") else { return 0 }
        var removed = 0
        for name in names where name.hasPrefix("jack_sem.") {
            guard let range = name.range(of: "_jaqtest-") else { continue }
            let pidText = name[range.upperBound...].prefix { $0.isNumber }
            guard let pid = Int32(pidText), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            if unlink("/dev/shm/" + name) == 0 { removed += 1 }
        }
        return removed
    }

    /// Empties the slots of servers whose process is gone; returns how many.
    @discardableResult
    public static func reclaimDeadServers() -> Int {
        let fd = open(path, O_RDWR)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: firstSlot + slotSize * slotCount)
        guard pread(fd, &header, header.count, 0) == header.count else { return 0 }
        let magicRead = header.withUnsafeBytes { $0.load(as: UInt32.self) }
        guard magicRead == magic else { return 0 }
        var reclaimed = 0
        for slot in 0..<slotCount {
            let offset = firstSlot + slot * slotSize
            let pid = header.withUnsafeBytes { $0.load(fromByteOffset: offset, as: Int32.self) }
            guard pid > 0, kill(pid, 0) != 0, errno == ESRCH else { continue }
            let empty = [UInt8](repeating: 0, count: slotSize)
            if pwrite(fd, empty, slotSize, off_t(offset)) == slotSize { reclaimed += 1 }
        }
        return reclaimed
    }
}
