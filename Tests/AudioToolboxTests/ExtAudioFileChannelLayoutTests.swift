import AudioToolbox
import Foundation
import Testing
import JackTestSupport

/// kExtAudioFileProperty_ClientChannelLayout: a client layout that orders the file's channels
/// differently reorders them, reading and writing (the converter's channel map).
@Suite struct ExtAudioFileChannelLayoutTests {
    /// An AudioChannelLayout of channel descriptions, as bytes.
    func layout(_ labels: [AudioChannelLabel]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 12 + 20 * labels.count)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: kAudioChannelLayoutTag_UseChannelDescriptions, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: UInt32(labels.count), toByteOffset: 8, as: UInt32.self)
            for (i, label) in labels.enumerated() { raw.storeBytes(of: label, toByteOffset: 12 + 20 * i, as: UInt32.self) }
        }
        return bytes
    }

    func setLayout(_ file: ExtAudioFileRef?, _ bytes: [UInt8]) -> OSStatus {
        bytes.withUnsafeBytes { ExtAudioFileSetProperty(file!, kExtAudioFileProperty_ClientChannelLayout, UInt32($0.count), $0.baseAddress!) }
    }

    /// Left is a ramp up, right a ramp down (16-bit, every sample distinct per channel).
    func stereo(frames: Int) -> [UInt8] {
        var samples = [Int16](repeating: 0, count: frames * 2)
        for n in 0..<frames {
            samples[2 * n] = Int16(n % 30000)
            samples[2 * n + 1] = Int16(-(n % 30000) - 1)
        }
        return samples.withUnsafeBytes { Array($0) }
    }

    func swapped(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        for frame in stride(from: 0, to: bytes.count, by: 4) {
            out[frame] = bytes[frame + 2]; out[frame + 1] = bytes[frame + 3]
            out[frame + 2] = bytes[frame]; out[frame + 3] = bytes[frame + 1]
        }
        return out
    }

    @Test func aClientLayoutOfRightThenLeftSwapsTheChannels() throws {
        let scratch = try Scratch()
        let format = EAF.pcm(48000, channels: 2)
        let source = stereo(frames: 5000)
        // Written through a client layout of (Right, Left): the file's left is the client's second channel.
        let url = scratch.url("swapped.wav")
        let (created, out) = EAF.create(url, kAudioFileWAVEType, format)
        try #require(created == noErr)
        #expect(EAF.setClient(out, format) == noErr)
        #expect(setLayout(out, layout([kAudioChannelLabel_Right, kAudioChannelLabel_Left])) == noErr)
        #expect(EAF.write(out, planes: [source], client: format) == noErr)
        #expect(ExtAudioFileDispose(out!) == noErr)
        // Read plainly: swapped. Read through (Right, Left) again: the source.
        let (opened, plain) = EAF.open(url)
        try #require(opened == noErr)
        #expect(EAF.setClient(plain, format) == noErr)
        let (status, planes) = EAF.read(plain, client: format)
        #expect(status == noErr && planes.first == swapped(source), "the file holds the channels swapped")
        ExtAudioFileDispose(plain!)
        let (reopened, reordered) = EAF.open(url)
        try #require(reopened == noErr)
        #expect(EAF.setClient(reordered, format) == noErr)
        #expect(setLayout(reordered, layout([kAudioChannelLabel_Right, kAudioChannelLabel_Left])) == noErr)
        let (again, back) = EAF.read(reordered, client: format)
        #expect(again == noErr && back.first == source, "reading through (Right, Left) swaps them back")
        // A layout in the file's own order, or one of other channels, leaves them as they are.
        #expect(setLayout(reordered, layout([kAudioChannelLabel_Left, kAudioChannelLabel_Right])) == noErr)
        ExtAudioFileDispose(reordered!)
    }
}
