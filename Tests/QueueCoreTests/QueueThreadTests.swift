import Glibc
import Synchronization
import Testing
@testable import Sync

/// The threads jaq starts carry their names as `ps -L`, `top -H` and perf show them.
@Suite struct QueueThreadTests {
    /// What /proc/thread-self/comm reads on a QueueThread named `name` (the kernel ends it with one newline).
    private func nameSeenOnThread(_ name: String) -> String {
        let seen = Mutex("")
        let thread = QueueThread(name: name) {
            let fd = open("/proc/thread-self/comm", O_RDONLY)
            guard fd >= 0 else { return }
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = read(fd, &buffer, buffer.count)
            close(fd)
            seen.withLock { $0 = String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self) }
        }
        thread.join()
        return seen.withLock { $0 }
    }

    @Test func aThreadIsNamedExactly() {
        #expect(nameSeenOnThread("jaq-writer") == "jaq-writer\n", "no stray byte in the name (ps -L showed 'jaq-writer?')")
    }

    @Test func aLongNameKeepsItsFirst15Bytes() {
        #expect(nameSeenOnThread("ExtAudioFile async") == "ExtAudioFile as\n")
    }
}
