import Testing
@testable import jaq

/// The record meters fit the terminal whatever the track count (issue: 64 tracks drew 65 lines
/// in a 24-line terminal, scrolling the display away at every update).
struct MeterLayoutTests {
    func layout(tracks: Int, clipping: Set<Int> = []) -> MeterLayout {
        var layout = MeterLayout(status: "● REC 00:01.0  buffer   0%  xruns 0  dropped 0")
        for i in 0..<tracks {
            layout.meters.append(MeterLayout.Meter(name: "capture_\(i + 1)", level: -Float(i % 60), hold: -Float(i % 60) + 3,
                                                   clipping: clipping.contains(i)))
        }
        return layout
    }

    @Test(arguments: [(2, 24, 80), (8, 24, 80), (64, 24, 80), (64, 70, 120), (64, 10, 60), (64, 3, 40), (16, 50, 30)])
    func everyLayoutFitsTheTerminal(tracks: Int, rows: Int, columns: Int) {
        let lines = layout(tracks: tracks).lines(rows: rows, columns: columns)
        #expect(lines.count <= max(2, rows - 1), "\(lines.count) lines for \(rows) rows")
        #expect(lines.allSatisfy { $0.count <= max(20, columns) }, "\(lines.map(\.count).max() ?? 0) columns for \(columns)")
    }

    @Test func fewTracksGetAFullMeterEach() {
        let lines = layout(tracks: 8).lines(rows: 24, columns: 80)
        #expect(lines.count == 9)
        #expect(lines[1].hasPrefix("capture_1 [") && lines[1].hasSuffix("     "), "\(lines[1])")
    }

    @Test func sixtyFourTracksIn24RowsShareLinesAndNoneIsLeftOut() {
        let lines = layout(tracks: 64, clipping: [41]).lines(rows: 24, columns: 132)
        #expect(lines.count <= 23 && lines.count > 2, "compact, not a summary: \(lines.count)")
        let shown = lines.dropFirst().joined(separator: "\n")
        for i in 0..<64 { #expect(shown.contains("ture_\(i + 1) ") || shown.contains("ure_\(i + 1) "), "track \(i + 1)") }
        #expect(shown.contains("!"), "the clipping track is marked")
    }

    @Test func aTinyTerminalGetsOneSummaryLineNamingTheClippingTracks() {
        let lines = layout(tracks: 64, clipping: [6, 9]).lines(rows: 4, columns: 80)
        #expect(lines.count == 2)
        #expect(lines[1].hasPrefix("64 tracks, loudest capture_1") && lines[1].contains("CLIP: capture_7 capture_10"), "\(lines[1])")
    }
}
