import ArgumentParser
import AudioToolbox

/// A queue's time/pitch unit as jaq's commands set it (kAudioQueueProperty_EnableTimePitch,
/// kAudioQueueProperty_TimePitchAlgorithm, kAudioQueueParam_PlayRate, kAudioQueueParam_Pitch).
struct TimePitchSettings {
    var rate: Float = 1
    var pitch: Float = 0
    var varispeed = false
    var timeDomain = false

    /// Checks the values; `rateOption` is how the command spells its rate option.
    func validate(rateOption: String) throws {
        guard rate.isFinite, (0.5...2).contains(rate) else { throw ValidationError("\(rateOption) \(rate): from 0.5 to 2") }
        guard pitch.isFinite, (-2400...2400).contains(pitch) else { throw ValidationError("--pitch \(pitch): from -2400 to 2400 cents") }
        if varispeed && timeDomain { throw ValidationError("--varispeed and --time-domain: choose one") }
        if varispeed && pitch != 0 { throw ValidationError("--varispeed changes the pitch with the rate: leave out --pitch") }
        if timeDomain && pitch != 0 { throw ValidationError("--time-domain keeps the pitch (Apple's too): leave out --pitch") }
    }

    /// Whether the files play through the time/pitch unit (at rate 1 and 0 cents they don't: bit-exact).
    var isActive: Bool { rate != 1 || pitch != 0 }

    /// Inserts and sets the time/pitch unit of a stopped queue; one line naming the file if it can't.
    func apply(to queue: AudioQueueRef, path: String) throws {
        guard isActive else { return }
        var one: UInt32 = 1
        var algorithm = varispeed ? kAudioQueueTimePitchAlgorithm_Varispeed
            : timeDomain ? kAudioQueueTimePitchAlgorithm_TimeDomain : kAudioQueueTimePitchAlgorithm_Spectral
        for status in [AudioQueueSetProperty(queue, kAudioQueueProperty_TimePitchAlgorithm, &algorithm, 4),
                       AudioQueueSetProperty(queue, kAudioQueueProperty_EnableTimePitch, &one, 4),
                       AudioQueueSetParameter(queue, kAudioQueueParam_PlayRate, rate),
                       AudioQueueSetParameter(queue, kAudioQueueParam_Pitch, pitch)] where status != noErr {
            // The values were checked: a Spectral or TimeDomain unit refused is Rubber Band missing
            // (it is opened when first used, and is not a dependency of the library), a Varispeed
            // one libsoxr (opened when first used too).
            if status == kAudioQueueErr_InvalidPropertyValue && !varispeed {
                throw CLIError("\(path): cannot change the speed or pitch: Rubber Band is not installed "
                               + "(apt-get install librubberband2), or use --varispeed (speed and pitch together)")
            }
            if varispeed, let reason = sampleRateConversionUnavailable {
                throw CLIError("\(path): cannot change the speed: \(reason)")
            }
            throw CLIError("\(path): cannot set the speed or pitch: \(describe(status, file: false))")
        }
    }

    /// Seconds of a file of `seconds` at this rate.
    func playedSeconds(_ seconds: Double) -> Double { seconds / Double(rate) }
}

/// `--speed S --pitch CENTS [--varispeed | --time-domain]`, for `jaq play` and `jaq render`.
/// `--speed` was `--rate` in play and `--play-rate` in render: both are still read, hidden from
/// the help (`--rate` is the sample rate wherever a command has one; play's `--rate` is
/// PlayCommand's own hidden option).
struct TimePitchOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Play at this speed, 0.5...2, keeping the pitch (Rubber Band).", valueName: "speed"))
    var speed: Float?

    @Option(name: .customLong("play-rate"), help: ArgumentHelp("The old spelling of --speed.", visibility: .hidden))
    var playRate: Float?

    @Option(name: .long, help: ArgumentHelp("Shift the pitch by this many cents, -2400...2400, keeping the speed.", valueName: "cents"))
    var pitch: Float = 0

    @Flag(name: .long, help: "With --speed: resample like tape (libsoxr), the pitch following the speed.")
    var varispeed = false

    @Flag(name: .long, help: "With --speed: Rubber Band's faster time-domain engine (Apple's TimeDomain algorithm).")
    var timeDomain = false

    /// The settings, with `oldRate` (play's hidden `--rate`) standing for --speed if given.
    func settings(oldRate: Float? = nil) -> TimePitchSettings {
        TimePitchSettings(rate: speed ?? playRate ?? oldRate ?? 1, pitch: pitch, varispeed: varispeed, timeDomain: timeDomain)
    }

    /// Checks the values, naming the option as the user spelled it.
    func validate(oldRate: Float?, oldRateName: String) throws {
        let given = [speed.map { ("--speed", $0) }, playRate.map { ("--play-rate", $0) }, oldRate.map { (oldRateName, $0) }].compactMap { $0 }
        if given.count > 1 { throw ValidationError("\(given.map(\.0).joined(separator: " and ")): give the speed once (--speed)") }
        try settings(oldRate: oldRate).validate(rateOption: given.first?.0 ?? "--speed")
    }
}
