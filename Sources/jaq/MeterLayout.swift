import FoundationEssentials
import Glibc

/// The record meters laid out for a terminal of `rows` × `columns`: the status line, then one
/// meter a line while they fit; several narrower meters a line when tracks outnumber the rows;
/// a one-line summary when even that does not fit. No line is wider than the terminal, and the
/// display never takes more than its rows less one (so the cursor line stays). A value type:
/// tested without a terminal (MeterLayoutTests).
struct MeterLayout {
    struct Meter {
        var name: String
        /// Peak level and held peak, dBFS.
        var level: Float
        var hold: Float
        var clipping: Bool
    }

    var status: String
    var meters: [Meter] = []

    init(status: String) { self.status = status }

    func lines(rows: Int, columns: Int) -> [String] {
        let room = max(1, rows - 2)  // the status line and the cursor's own line
        let columns = max(20, columns)
        let statusLine = String(status.prefix(columns))
        if meters.count <= room {
            return [statusLine] + full(columns: columns)
        }
        let compact = compactLines(columns: columns)
        if compact.count <= room { return [statusLine] + compact }
        return [statusLine, summary(columns: columns)]
    }

    /// One meter a line: name, bar, level, clip mark.
    private func full(columns: Int) -> [String] {
        let nameWidth = min(24, meters.map(\.name.count).max() ?? 8)
        // name + " [" + bar + "] " + "-99.9 dB" + " CLIP"
        let width = max(10, min(40, columns - nameWidth - 19))
        return meters.map { meter in
            let name = String(meter.name.suffix(nameWidth)).padded(toWidth: nameWidth)
            let line = "\(name) [\(bar(meter, width: width))] \(decibels(meter.level)) dB\(meter.clipping ? " CLIP" : "     ")"
            return String(line.prefix(columns))
        }
    }

    /// Several meters a line: short names and narrow bars.
    private func compactLines(columns: Int) -> [String] {
        // "name8 [bar10] -99.9!" and two spaces between cells.
        let nameWidth = min(8, meters.map(\.name.count).max() ?? 8)
        let barWidth = 10
        let cellWidth = nameWidth + 2 + barWidth + 2 + 5 + 1
        let perLine = max(1, (columns + 2) / (cellWidth + 2))
        var lines: [String] = []
        var index = 0
        while index < meters.count {
            let cells = meters[index..<min(index + perLine, meters.count)].map { meter in
                let name = String(meter.name.suffix(nameWidth)).padded(toWidth: nameWidth)
                return "\(name) [\(bar(meter, width: barWidth))]\(decibels(meter.level))\(meter.clipping ? "!" : " ")"
            }
            lines.append(String(cells.joined(separator: "  ").prefix(columns)))
            index += perLine
        }
        return lines
    }

    /// One line for all: the loudest track, and which ones clip.
    private func summary(columns: Int) -> String {
        let loudest = meters.max { $0.level < $1.level }
        let clipping = meters.filter(\.clipping).map(\.name)
        var line = "\(meters.count) tracks, loudest \(loudest.map { "\($0.name) \(decibels($0.level)) dB" } ?? "-")"
        line += clipping.isEmpty ? ", none clipping" : ", CLIP: " + clipping.joined(separator: " ")
        return String(line.prefix(columns))
    }

    private func bar(_ meter: Meter, width: Int) -> String {
        let filled = Int((Double(max(meter.level, -60)) + 60) / 60 * Double(width))
        let hold = Int((Double(max(meter.hold, -60)) + 60) / 60 * Double(width))
        var bar = Array(repeating: Character(" "), count: width)
        for j in 0..<min(filled, width) { bar[j] = j < width * 5 / 6 ? "=" : "#" }
        if hold > 0 && hold <= width { bar[hold - 1] = "|" }
        return String(bar)
    }

    private func decibels(_ level: Float) -> String { String(cFormat: "%5.1f", max(level, -99.9)) }
}
