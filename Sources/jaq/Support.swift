import AudioToolbox
import Dispatch
import Foundation
import Glibc
import Synchronization

/// SIGINT, SIGTERM and SIGHUP as a flag the main loop polls: the handlers run on a
/// dispatch queue, never in signal context, and never touch audio.
final class Interruption: @unchecked Sendable {
    private let signalled = SharedFlag()
    private var sources: [DispatchSourceSignal] = []

    init() {
        // A file size limit makes writes fail with EFBIG (reported) instead of killing jaq.
        Glibc.signal(SIGXFSZ, SIG_IGN)
        for number in [SIGINT, SIGTERM, SIGHUP] {
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [signalled] in signalled.setOnce(number) }
            source.resume()
            sources.append(source)
        }
    }

    /// The signal received, if any.
    var signal: Int32? {
        let value = signalled.value
        return value == 0 ? nil : value
    }

    /// The conventional exit status for a signal: 128 + its number.
    static func exitStatus(_ number: Int32) -> Int32 { 128 + number }
}

/// Parses durations and times: "90" or "1.5" seconds, "1:30", "1:02:03.5", "480000f" frames.
/// "90s" is refused: sox reads it as samples, so it means two things (`problem` says so).
enum TimeSpec {
    /// Frames at `rate` for `text`; nil if it does not parse.
    static func frames(_ text: String, rate: Double) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("f"), let frames = Int64(trimmed.dropLast()), frames >= 0 { return frames }
        var seconds = 0.0
        for part in trimmed.split(separator: ":", omittingEmptySubsequences: false) {
            guard let value = Double(part), value >= 0 else { return nil }
            seconds = seconds * 60 + value
        }
        guard seconds.isFinite else { return nil }
        return Int64((seconds * rate).rounded())
    }

    /// Why `text` is not a time, in words a usage error prints after the option's name.
    static func problem(_ text: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("s"), let number = Double(trimmed.dropLast()), number >= 0 {
            let digits = String(trimmed.dropLast())
            return "a trailing s means samples to sox and seconds elsewhere: write \(digits) for seconds or \(digits)f for frames"
        }
        return "not a time (seconds, m:ss, h:mm:ss, or Nf for frames)"
    }

    /// "mm:ss.t" or "h:mm:ss.t" for `frames` at `rate`.
    static func clock(_ frames: Int64, rate: Double) -> String {
        let total = Double(max(frames, 0)) / rate
        let hours = Int(total) / 3600
        let minutes = (Int(total) / 60) % 60
        let seconds = total - Double(hours * 3600 + minutes * 60)
        let tenths = String(format: "%04.1f", seconds)
        return hours > 0 ? String(format: "%d:%02d:", hours, minutes) + tenths : String(format: "%02d:", minutes) + tenths
    }
}

/// True when standard output is a terminal (live display), false for scripts and logs.
var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

/// A name safe in a JACK client name or a file name.
func sanitized(_ text: String, limit: Int = 32) -> String {
    let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
    let mapped = String(text.map { allowed.contains($0) ? $0 : "_" })
    return String(mapped.prefix(limit))
}

/// A take's file name: `pattern` with each `{key}` of `fields` replaced by its value, in one
/// pass (a value is never searched for keys, so a track named `{n}` stays so); other braces
/// stay as they are.
func expandTakeName(_ pattern: String, _ fields: [(key: String, value: String)]) -> String {
    var result = ""
    var rest = pattern[...]
    while let open = rest.firstIndex(of: "{") {
        result += rest[..<open]
        rest = rest[open...]
        if let field = fields.first(where: { rest.hasPrefix("{\($0.key)}") }) {
            result += field.value
            rest = rest.dropFirst(field.key.count + 2)
        } else {
            result += "{"
            rest = rest.dropFirst()
        }
    }
    return result + rest
}

/// `number` in decimal, zero-padded to `width` digits.
func zeroPadded(_ number: Int, width: Int) -> String {
    let digits = String(number)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}

/// An integer flag shared between threads.
final class SharedFlag: Sendable {
    private let storage = Atomic<Int32>(0)
    var value: Int32 { storage.load(ordering: .relaxed) }
    func set(_ value: Int32) { storage.store(value, ordering: .relaxed) }
    /// Sets the value unless one was set already.
    func setOnce(_ value: Int32) { _ = storage.compareExchange(expected: 0, desired: value, ordering: .relaxed) }
}

/// Sets a CFString-valued queue property (the value is a CFStringRef, as in C).
@discardableResult
func setStringProperty(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID, _ text: String) -> OSStatus {
    let string = CFString.make(text)
    var pointer = OpaquePointer(Unmanaged.passUnretained(string).toOpaque())
    return withExtendedLifetime(string) {
        AudioQueueSetProperty(queue, id, &pointer, UInt32(MemoryLayout<OpaquePointer>.size))
    }
}

/// A CFString-valued queue property as text; nil if the queue has none.
func stringProperty(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID) -> String? {
    var value: OpaquePointer?
    var size = UInt32(MemoryLayout<OpaquePointer?>.size)
    guard AudioQueueGetProperty(queue, id, &value, &size) == noErr, let value else { return nil }
    // The queue hands over a retained CFString (the Create rule, as on Apple platforms).
    return String(Unmanaged<CFString>.fromOpaque(UnsafeRawPointer(value)).takeRetainedValue())
}

/// A value behind a lock, for the CLI's threads (the main loop, the writer, signal handlers).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
