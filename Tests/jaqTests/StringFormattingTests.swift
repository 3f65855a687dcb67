import Foundation
import Testing
@testable import jaq

/// The tool formats numbers and columns without Foundation (StartupLinkTests): what it prints is
/// what Foundation's `String(format:)` and `padding(toLength:withPad:startingAt:)` printed.
struct StringFormattingTests {
    static let doubles: [Double] = [0, -0.0, 0.04, 0.05, 0.06, 0.125, 0.15, 0.25, 0.375, 1, 1.005, 1.25, 9.95, 9.96, 9.995, 59.95, 59.96, 99.9, 99.95, -0.04, -0.05,
                                    -12.345, -99.9, -100, 123456.789, 0.00049, 0.00005, 0.99995, 1e15 + 0.5]
    static let integers = [0, 1, 9, 10, 59, 99, 100, 999, 1000, 65535, -1, -42]

    @Test(arguments: ["%5.1f", "%.2f dBFS", "%.4f", "%.3f", "%04.1f"])
    func decimalsAreFoundations(_ format: String) {
        for value in Self.doubles {
            #expect(String(cFormat: format, value) == String(format: format, value), "\(format) of \(value)")
            let single = Float(value)
            #expect(String(cFormat: format, single) == String(format: format, single), "\(format) of Float \(single)")
        }
    }

    @Test(arguments: ["%d", "%02d", "%3d", "%d:%02d:", "%02d:%02d:%02d.%03d", "buffer %3d%%"])
    func integersAreFoundations(_ format: String) {
        for value in Self.integers {
            let count = format.components(separatedBy: "%").count - 1
            let arguments: [any CFormatArgument] = Array(repeating: value, count: count)
            let foundations: [CVarArg] = Array(repeating: value, count: count)
            #expect(String(cFormat: format, arguments: arguments) == String(format: format, arguments: foundations), "\(format) of \(value)")
        }
    }

    /// printf leaves `%d` of a double undefined; here it is the whole part, and a value no Int
    /// holds (or not a number) is printed as Swift prints it, never a trap.
    @Test func aDoubleUnderAnIntegerConversionIsItsWholePart() {
        #expect(String(cFormat: "%3d", 42.7) == " 42")
        #expect(String(cFormat: "%d", -3.9) == "-3")
        #expect(String(cFormat: "%d", 1e300) == "1e+300")
        #expect(String(cFormat: "%d", Double.nan) == "nan")
        #expect(String(cFormat: "%5.1f", Double.infinity) == "  inf")
    }

    @Test func columnsAreFoundations() {
        for text in ["", "a", "system:capture_1", "caf\u{E9}", "\u{1F3B5} music", String(repeating: "x", count: 40)] {
            for width in [0, 1, 5, 20, 30] {
                #expect(text.padded(toWidth: width) == text.padding(toLength: width, withPad: " ", startingAt: 0), "\(text) to \(width)")
            }
        }
    }
}
