import AudioToolbox
import FoundationEssentials
import Glibc

/// Where a take's first sample belongs on a timeline, as its Broadcast Wave chunk (`bext`)
/// says to a DAW (Docs/cli.md, "Takes that know their place"):
/// - the JACK transport frame of that sample, when the take follows the transport
///   (`--transport`) or the transport rolls as the take starts;
/// - otherwise its JACK frame (the frame `--at` names, `jaq time` prints): on a netjack2 slave
///   recording `--at F --clock PORT`, the master's frame, as F names it.
/// The first sample is the pre-roll's first, on the track with the least capture latency (the
/// others are aligned to it). A position before the transport's frame 0 (a pre-roll longer than
/// the transport had rolled) is written as 0. The value counts samples at the file's rate.
struct TakePlace: Equatable {
    enum Timeline: Equatable { case transport, jackFrames, masterFrames }
    var timeline: Timeline
    /// Samples at the file's rate.
    var samples: UInt64
    /// The position fell before 0 and was written as 0.
    var clampedToZero = false

    /// - Parameters:
    ///   - firstDeviceFrame: the JACK frame (64-bit device time) of the take's first sample.
    ///   - transport: a device frame at which the rolling transport was at `position` (the roll
    ///     that started a `--transport` take, or the transport as the take starts), or nil.
    ///   - masterOffset: the master's frame less this server's (`--clock`), or nil.
    static func of(firstDeviceFrame: Int64, transport: (deviceFrame: Int64, position: Int64)?, masterOffset: Int64? = nil,
                   deviceRate: Double, fileRate: Double) -> TakePlace {
        let toFile = { (frames: Int64) -> Int64 in Int64((Double(frames) * fileRate / deviceRate).rounded()) }
        guard let transport else {
            let frame = firstDeviceFrame + (masterOffset ?? 0)
            return TakePlace(timeline: masterOffset == nil ? .jackFrames : .masterFrames, samples: UInt64(max(0, toFile(frame))),
                             clampedToZero: frame < 0)
        }
        let position = transport.position + (firstDeviceFrame - transport.deviceFrame)
        return TakePlace(timeline: .transport, samples: UInt64(max(0, toFile(position))), clampedToZero: position < 0)
    }

    /// In words, for the log: "transport frame 96000" / "JACK frame 123456789".
    var description: String {
        (timeline == .transport ? "transport frame \(samples)" : timeline == .masterFrames ? "the master's JACK frame \(samples)"
            : "JACK frame \(samples)")
            + (clampedToZero ? " (before frame 0: written as 0)" : "")
    }

    /// The chunk of each file: its ports in the description, jaq as originator, the local date
    /// and time `now` (seconds since 1970), and a coding history line.
    func broadcastWaves(files: [TakeFile], sources: [String], format: AudioTakeFile.Format, rate: Double,
                        now: time_t = time(nil)) -> [AudioTakeFile.BroadcastWave] {
        let local = LocalTime(now)
        let date = local.date, time = local.time, stamp = local.stamp
        let bits = format.samples == .float32 ? "32F" : "\(format.bytesPerSample * 8)"
        let origin = timeline == .transport ? "JACK transport frame" : timeline == .masterFrames ? "the netjack2 master's JACK frame"
            : "JACK frame"
        return files.enumerated().map { index, file in
            let ports = file.channels.map { sources.indices.contains($0) ? sources[$0] : "channel \($0 + 1)" }
            let mode = file.channels.count == 1 ? "mono" : file.channels.count == 2 ? "stereo" : "multitrack"
            return AudioTakeFile.BroadcastWave(
                description: "jaq record from \(ports.joined(separator: ", ")); time reference: \(origin)",
                originator: "jaq \(jaqVersion)",
                originatorReference: "jaq\(stamp)\(getpid())-\(index + 1)",
                originationDate: date, originationTime: time, timeReference: samples,
                codingHistory: "A=PCM,F=\(Int(rate)),W=\(bits),M=\(mode),T=jaq \(jaqVersion)")
        }
    }
}
