import FoundationEssentials
import Glibc

/// Parses durations and times: "90" or "1.5" seconds, "1:30", "1:02:03.5", "480000f" frames.
/// "90s" is refused: sox reads it as samples, so it means two things (`problem` says so).
enum TimeSpec {
    /// Frames at `rate` for `text`; nil if it does not parse.
    static func frames(_ text: String, rate: Double) -> Int64? {
        let trimmed = text.trimmingWhitespace()
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
        let trimmed = text.trimmingWhitespace()
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
        let tenths = String(cFormat: "%04.1f", seconds)
        return hours > 0 ? String(cFormat: "%d:%02d:", hours, minutes) + tenths : String(cFormat: "%02d:", minutes) + tenths
    }
}
