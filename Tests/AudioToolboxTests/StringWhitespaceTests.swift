import Foundation
import Testing
@testable import AudioToolbox

/// The channel-assignment list (a queue's comma-separated connection target) is trimmed by
/// `trimmingWhitespace`, which stands in for Foundation's `trimmingCharacters(in: .whitespaces)`
/// so that AudioToolbox needs FoundationEssentials only: both must cut the same characters.
@Suite struct StringWhitespaceTests {
    static let samples = [
        "", " ", "\t", "system:playback_1", " system:playback_1 ", "\tsystem:playback_1\t ",
        "\u{00A0}a b\u{3000}", "\u{2003}\u{2009}x\u{202F}", "\na\n", " \r\na\u{0B} ", "a\u{200B}",
        " é ", " 🎧 ", "\u{1680}\u{205F}",
    ]

    @Test(arguments: samples) func trimsWhatFoundationTrims(_ text: String) {
        #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces))
    }
}
