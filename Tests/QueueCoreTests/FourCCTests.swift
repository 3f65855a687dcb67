import Testing
import QueueCore

/// Four-char codes as jaq prints them in every message and in `jaq info`.
@Suite struct FourCCTests {
    @Test func printableCodesAreQuotedText() {
        #expect(fourCharacterCode(UInt32(0x666D_743F)) == "'fmt?'")        // kAudioFileUnsupportedDataFormatError
        #expect(fourCharacterCode(Int32(0x7479_703F)) == "'typ?'")         // an OSStatus
        #expect(fourCharacterCode(UInt32(0x5741_5645), quoted: false) == "WAVE")
        #expect(fourCharacterCode(UInt32(0x6C70_636D)) == "'lpcm'")
        #expect(fourCharacterCode(UInt32(0x2020_2020)) == "'    '")         // spaces are printable
    }

    @Test func otherCodesAreDecimal() {
        #expect(fourCharacterCode(Int32(-43)) == "-43")                     // kAudioFileFileNotFoundError
        #expect(fourCharacterCode(Int32(0)) == "0")
        #expect(fourCharacterCode(UInt32(1)) == "1")
        #expect(fourCharacterCode(UInt32(0x666D_747F)) == String(0x666D_747F)) // DEL is not printable
        #expect(fourCharacterCode(UInt32(0xFFFF_FFCE), quoted: false) == "-50")
        #expect(fourCharacterCode(UInt32(0x8061_6263)) == String(Int32(bitPattern: 0x8061_6263)))
    }
}
