import AudioToolbox
import Foundation
import Glibc

/// A deterministic mutation fuzzer: mutant `i` of seed `S` is always the same bytes, so a
/// crash found once is reproduced with `fuzz --seed S --start i --iterations 1`.
final class Fuzzer {
    let seed: UInt64
    let crashDirectory: String
    /// The files mutants are made of, in a fixed order: generated seeds, then the corpora's files sorted.
    private(set) var inputs: [(name: String, bytes: [UInt8])] = []
    private let work: String

    /// How long one mutant's walk may take before it counts as a hang.
    static let hangSeconds: UInt32 = 20

    init(seed: UInt64, crashDirectory: String, corpora: [String]) throws {
        self.seed = seed
        self.crashDirectory = crashDirectory
        try FileManager.default.createDirectory(atPath: crashDirectory, withIntermediateDirectories: true)
        work = NSTemporaryDirectory() + "filefuzz-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        inputs = SeedFiles.make(in: work)
        for corpus in corpora {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: corpus))?.sorted() ?? []
            for name in names where !name.hasPrefix(".") {
                if let data = FileManager.default.contents(atPath: "\(corpus)/\(name)"), !data.isEmpty {
                    inputs.append((name, Array(data)))
                }
            }
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: work) }

    /// Walks mutants `start..<start+count`; prints a summary of the result codes seen. A mutant
    /// whose walk returned something that is not a result code, or sizes that disagree, is
    /// saved as odd-S-i.bin and makes the run exit 1 at the end.
    func run(from start: Int, count: Int) {
        let pending = "\(crashDirectory)/.pending"
        let mutantPath = "\(work)/mutant"
        FuzzSignals.install(pending: pending)
        var outcomes: [String: Int] = [:]
        var oddities = 0
        let began = Date()
        for index in start..<start + count {
            var random = SplitMix64(seed: seed ^ (UInt64(index) &* 0x9E37_79B9_7F4A_7C15))
            let input = inputs[Int(random.next() % UInt64(inputs.count))]
            let mutant = Mutator.mutate(input.bytes, &random)
            _ = FileManager.default.createFile(atPath: pending, contents: Data(mutant))
            _ = FileManager.default.createFile(atPath: mutantPath, contents: Data(mutant))
            FuzzSignals.arm(crash: "\(crashDirectory)/crash-\(seed)-\(index).bin", hang: "\(crashDirectory)/hang-\(seed)-\(index).bin",
                            message: "FileFuzz: mutant \(index) of seed \(seed) (from \(input.name))")
            var walk = FileWalk()
            walk.walk(mutantPath, writes: true)
            alarm(0)
            if !walk.violations.isEmpty {
                // Saved like a crash, but the run goes on; it fails at the end.
                let saved = "\(crashDirectory)/odd-\(seed)-\(index).bin"
                rename(pending, saved)
                print("FileFuzz: mutant \(index) of seed \(seed) (from \(input.name)): \(walk.violations.joined(separator: ", ")); input saved as \(saved)")
                oddities += 1
            }
            let opened = walk.results.first?.1 ?? "?"
            outcomes["open=\(opened)", default: 0] += 1
        }
        unlink(pending)
        let summary = outcomes.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " ")
        print("mutants=\(count) seed=\(seed) inputs=\(inputs.count) seconds=\(String(format: "%.1f", Date().timeIntervalSince(began))) "
              + "odd=\(oddities) \(summary)")
        fflush(nil)
        if oddities > 0 { exit(1) }
    }
}

/// What the signal handlers need, prepared before each mutant: a handler may only call
/// async-signal-safe functions (rename, write, raise), so the paths are C strings made in advance.
enum FuzzSignals {
    nonisolated(unsafe) static var pending: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) static var crashTarget: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) static var hangTarget: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) static var message: UnsafeMutablePointer<CChar>?

    static let crashSignals = [SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT]

    static func install(pending path: String) {
        pending = strdup(path)
        for signal in crashSignals + [SIGALRM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                let target = number == SIGALRM ? FuzzSignals.hangTarget : FuzzSignals.crashTarget
                if let pending = FuzzSignals.pending, let target { rename(pending, target) }
                if let message = FuzzSignals.message { _ = write(2, message, strlen(message)) }
                let kind = number == SIGALRM ? ": hang, input saved as " : ": crashed by a signal, input saved as "
                _ = write(2, kind, strlen(kind))
                if let target { _ = write(2, target, strlen(target)) }
                _ = write(2, "\n", 1)
                Glibc.signal(number, SIG_DFL)
                raise(number)
            }
            action.sa_flags = Int32(truncatingIfNeeded: SA_RESETHAND)
            sigaction(signal, &action, nil)
        }
    }

    static func arm(crash: String, hang: String, message text: String) {
        free(crashTarget); free(hangTarget); free(message)
        crashTarget = strdup(crash)
        hangTarget = strdup(hang)
        message = strdup(text)
        alarm(Fuzzer.hangSeconds)
    }
}

/// A small, fast, seedable generator (Steele, Lea, Flood: SplitMix64).
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Byte-level mutations of the kind that find header bugs: flipped bits, sizes and counts set
/// to the values arithmetic breaks on, cuts, repeats and removals.
enum Mutator {
    static let interesting32: [UInt32] = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x1_0000,
                                          0x4000_0000, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFE, 0xFFFF_FFFF]

    static func mutate(_ input: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = input
        let rounds = 1 + Int(random.next() % 6)
        for _ in 0..<rounds {
            guard !bytes.isEmpty else { break }
            let position = Int(random.next() % UInt64(bytes.count))
            switch random.next() % 8 {
            case 0: bytes[position] ^= UInt8(1) << UInt8(random.next() % 8)
            case 1: bytes[position] = [0, 0xFF, 0x7F, 0x80, 1][Int(random.next() % 5)]
            case 2, 3:
                // A 32-bit field, either byte order (RIFF is little-endian, AIFF and CAF big).
                let value = interesting32[Int(random.next() % UInt64(interesting32.count))]
                let field = random.next() % 2 == 0 ? value.bigEndian : value.littleEndian
                withUnsafeBytes(of: field) { for (i, byte) in $0.enumerated() where position + i < bytes.count { bytes[position + i] = byte } }
            case 4: bytes.removeSubrange(position...)  // truncated
            case 5:
                let length = min(Int(random.next() % 64) + 1, bytes.count - position)
                bytes.removeSubrange(position..<position + length)
            case 6:
                let length = min(Int(random.next() % 64) + 1, bytes.count - position)
                bytes.insert(contentsOf: bytes[position..<position + length], at: position)
            default: bytes[position] = UInt8(truncatingIfNeeded: random.next())
            }
        }
        return bytes
    }
}
