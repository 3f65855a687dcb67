import ArgumentParser

/// A time given to an option (`--in`, `--pre-roll`, `--buffer`, `--margin`, render's `--offset`):
/// the one syntax of every time option, as `--duration` reads it (TimeSpec): seconds ("90",
/// "1.5"), "m:ss", "h:mm:ss.t", or "Nf" frames (at the rate the option is about).
struct TimeValue: Sendable, Equatable, ExpressibleByArgument, CustomStringConvertible {
    enum Amount: Sendable, Equatable {
        case seconds(Double)
        case frames(Int64)
    }

    let amount: Amount

    init(seconds: Double) { amount = .seconds(seconds) }

    init?(argument: String) {
        guard let value = try? Self.parse(argument) else { return nil }
        self = value
    }

    private init(amount: Amount) { self.amount = amount }

    /// Parses `text`; a ValidationError says why it is not a time (argument-parser prints it
    /// after the option's name, and exits with the usage status).
    static func parse(_ text: String) throws -> TimeValue {
        let trimmed = text.trimmingWhitespace()
        if trimmed.hasSuffix("f"), let frames = Int64(trimmed.dropLast()), frames >= 0 { return TimeValue(amount: .frames(frames)) }
        // Seconds: at a rate of 1, TimeSpec's frames are seconds, to the microsecond at 10^6.
        guard !trimmed.hasSuffix("s"), !trimmed.hasSuffix("f"), let micro = TimeSpec.frames(trimmed, rate: 1_000_000) else {
            throw ValidationError(TimeSpec.problem(text))
        }
        return TimeValue(amount: .seconds(Double(micro) / 1_000_000))
    }

    /// Frames at `rate`.
    func frames(at rate: Double) -> Int64 {
        switch amount {
        case .seconds(let seconds): Int64((seconds * rate).rounded())
        case .frames(let frames): frames
        }
    }

    /// Seconds at `rate` (frames are counted at it).
    func seconds(at rate: Double) -> Double {
        switch amount {
        case .seconds(let seconds): seconds
        case .frames(let frames): Double(frames) / rate
        }
    }

    var isZero: Bool { frames(at: 1_000_000) == 0 }

    var description: String {
        switch amount {
        case .seconds(let seconds): seconds == seconds.rounded() ? "\(Int64(seconds))" : "\(seconds)"
        case .frames(let frames): "\(frames)f"
        }
    }

    var defaultValueDescription: String { description }
}
