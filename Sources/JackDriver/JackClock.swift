import CJack
import Glibc
import QueueCore

/// The server's cycle clock as `jack_get_cycle_times` reports it: the frame time of the
/// current cycle and the CLOCK_MONOTONIC microseconds at which it and the next one begin.
///
/// Every conversion between frames and host time outside the process callback goes through
/// this one reading, with jaq's own arithmetic, because it is the only clock call that jackd2
/// and PipeWire's libjack (`pw-jack`) implement the same way from any thread. PipeWire 0.3.65
/// differs in the others:
/// - `jack_frame_time` on a client that has not been activated (or has not run a cycle yet)
///   returns CLOCK_MONOTONIC × sample rate, not a frame time (its position is all zeros);
/// - `jack_time_to_frames` for a time before the current cycle, and `jack_frames_to_time` for a
///   frame before it, subtract unsigned 64-bit values and return garbage (2^31 + frames,
///   2^63 µs);
/// - `jack_last_frame_time` and `jack_get_cycle_times` read 0 until the client runs cycles.
/// jackd2's `jack_time_to_frames` is `frames + rint((t - current) / (next - current) × period)`;
/// `frame(atMicroseconds:)` is that formula, so both servers give the same answers.
public struct JackCycleClock: Sendable, Equatable {
    /// Frame time of the current cycle (`jack_last_frame_time` of the process thread).
    public var frames: UInt32
    /// CLOCK_MONOTONIC microseconds at which the current cycle began.
    public var microseconds: UInt64
    /// CLOCK_MONOTONIC microseconds at which the next cycle is due.
    public var nextMicroseconds: UInt64
    /// Frames in a cycle (the period, PipeWire's quantum).
    public var periodFrames: Int

    /// Reads the clock of `client`'s server; nil while it has no cycle to report (PipeWire
    /// before the client's first cycle: all zeros). The fields are read twice until two reads
    /// agree, so a cycle that begins during the read (PipeWire updates them in place, not
    /// atomically) never gives a torn reading.
    public static func read(_ client: OpaquePointer) -> JackCycleClock? {
        for _ in 0..<8 {
            guard let first = readOnce(client), let second = readOnce(client) else { return nil }
            if first == second { return first }
        }
        return nil
    }

    private static func readOnce(_ client: OpaquePointer) -> JackCycleClock? {
        var frames: jack_nframes_t = 0
        var current: jack_time_t = 0
        var next: jack_time_t = 0
        var period: Float = 0
        guard jack_get_cycle_times(client, &frames, &current, &next, &period) == 0,
              current != 0, next > current else { return nil }
        let periodFrames = Int(jack_get_buffer_size(client))
        guard periodFrames > 0 else { return nil }
        return JackCycleClock(frames: frames, microseconds: current, nextMicroseconds: next, periodFrames: periodFrames)
    }

    /// Frames per microsecond, as the server's clock runs (its period over the cycle's length).
    var framesPerMicrosecond: Double { Double(periodFrames) / Double(nextMicroseconds - microseconds) }

    /// Frames from the current cycle's start to `microseconds` (negative before it).
    public func frameOffset(atMicroseconds time: UInt64) -> Int64 {
        let elapsed = Double(Int64(bitPattern: time &- microseconds))
        return Int64((elapsed * framesPerMicrosecond).rounded())
    }

    /// The 32-bit frame time at CLOCK_MONOTONIC `microseconds` (as jackd2's `jack_time_to_frames`).
    public func frame(atMicroseconds time: UInt64) -> UInt32 {
        frames &+ UInt32(truncatingIfNeeded: frameOffset(atMicroseconds: time))
    }

    /// CLOCK_MONOTONIC microseconds at which the frame `offset` frames after the current
    /// cycle's first begins (as jackd2's `jack_frames_to_time`).
    public func microseconds(atFrameOffset offset: Int64) -> UInt64 {
        let elapsed = (Double(offset) / framesPerMicrosecond).rounded()
        return UInt64(bitPattern: Int64(bitPattern: microseconds) &+ Int64(elapsed))
    }

    /// The frame time now.
    public var frameNow: UInt32 { frame(atMicroseconds: HostClock.nanoseconds() / 1000) }
}

/// Which libjack this process runs on.
public enum JackLibrary {
    /// libjack's version string: jackd2's "1.9.21", PipeWire's "3.0.0.0 (using PipeWire 0.3.65)".
    public static let version: String = {
        guard let string = jack_get_version_string() else { return "" }
        return String(cString: string)
    }()

    /// True when libjack is PipeWire's (`pw-jack`, Debian's pipewire-jack): there is no jackd,
    /// the server is the PipeWire daemon, clients report time only once they are active,
    /// and starting a private jackd would not help (PipeWire's libjack cannot reach it).
    public static var isPipeWire: Bool { version.contains("PipeWire") }
}
