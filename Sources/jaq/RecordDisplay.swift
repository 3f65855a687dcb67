import AudioToolbox
import FoundationEssentials
import Glibc

/// The live display: a meter per track with peak hold and clip marks, time, buffer, xruns,
/// laid out to fit the terminal (MeterLayout).
final class RecordDisplay {
    let enabled: Bool
    let tracks: [String]
    let rate: Double
    private var holds: [(level: Float, until: Date)]
    private var clips: [Date]
    private var drawn = 0
    private var last = Date.distantPast

    init(enabled: Bool, tracks: [String], rate: Double) {
        self.enabled = enabled
        self.tracks = tracks
        self.rate = rate
        holds = Array(repeating: (-120, .distantPast), count: tracks.count)
        clips = Array(repeating: .distantPast, count: tracks.count)
    }

    func update(written: Int64, meters: [AudioQueueLevelMeterState], bufferFill: Double, xruns: Int, dropped: Int64, armed: Bool) {
        guard enabled, Date().timeIntervalSince(last) >= 0.08 else { return }
        let now = Date()
        last = now
        let status = armed ? "ARMED" : "● REC"
        var layout = MeterLayout(status: "\(status) \(TimeSpec.clock(written, rate: rate))  buffer \(String(cFormat: "%3d", Int(bufferFill * 100)))%  xruns \(xruns)  dropped \(dropped)")
        for (i, track) in tracks.enumerated() {
            let level = i < meters.count ? meters[i].mPeakPower : -120
            if level >= holds[i].level || now > holds[i].until { holds[i] = (level, now.addingTimeInterval(2)) }
            if level >= -0.01 { clips[i] = now.addingTimeInterval(3) }
            layout.meters.append(MeterLayout.Meter(name: track, level: level, hold: holds[i].level, clipping: now < clips[i]))
        }
        let size = terminalSize()
        let lines = layout.lines(rows: size.rows, columns: size.columns)
        var text = drawn > 0 ? "\u{1B}[\(drawn)A" : ""
        text += lines.map { "\r\u{1B}[K" + $0 }.joined(separator: "\n") + "\n"
        if lines.count < drawn {
            // The layout shrank (the terminal did): clear what is left below.
            text += "\u{1B}[J"
        }
        drawn = lines.count
        StandardStreams.output(text)
    }

    /// The terminal's rows and columns (24 × 80 when it does not say).
    private func terminalSize() -> (rows: Int, columns: Int) {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else { return (24, 80) }
        return (Int(size.ws_row), Int(size.ws_col))
    }
}

