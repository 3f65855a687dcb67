import AudioToolbox
import Foundation
import QueueCore

/// AudioStreamBasicDescriptions whose fields are out of every range, given to
/// AudioQueueNewOutput, AudioQueueNewInput and AudioFileCreateWithURL. Each must return a
/// result code ('fmt?' for all of these); the line printed per format names them.
enum HostileFormats {
    static func pcm(_ rate: Double = 48000, flags: AudioFormatFlags = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                    bytesPerPacket: UInt32 = 4, framesPerPacket: UInt32 = 1, bytesPerFrame: UInt32 = 4, channels: UInt32 = 2,
                    bits: UInt32 = 16, id: AudioFormatID = kAudioFormatLinearPCM) -> AudioStreamBasicDescription {
        AudioStreamBasicDescription(mSampleRate: rate, mFormatID: id, mFormatFlags: flags, mBytesPerPacket: bytesPerPacket,
                                    mFramesPerPacket: framesPerPacket, mBytesPerFrame: bytesPerFrame, mChannelsPerFrame: channels,
                                    mBitsPerChannel: bits, mReserved: 0)
    }

    static let unpacked = kAudioFormatFlagIsSignedInteger
    static let cases: [(String, AudioStreamBasicDescription)] = [
        ("bpf-0x40000000", pcm(flags: unpacked, bytesPerPacket: 0x4000_0000, bytesPerFrame: 0x4000_0000)),
        ("bpf-max", pcm(flags: unpacked, bytesPerPacket: .max, bytesPerFrame: .max)),
        ("bpf-max-1ch", pcm(flags: unpacked, bytesPerPacket: .max, bytesPerFrame: .max, channels: 1)),
        ("bits-max", pcm(flags: unpacked, bits: .max)),
        ("bits-max-bpf-max", pcm(flags: unpacked, bytesPerPacket: .max, bytesPerFrame: .max, channels: 1, bits: .max)),
        ("channels-max", pcm(channels: .max)),
        ("channels-max-bpf-max", pcm(flags: unpacked, bytesPerPacket: .max, bytesPerFrame: .max, channels: .max, bits: .max)),
        ("bpp-max", pcm(bytesPerPacket: .max)),
        ("fpp-max", pcm(framesPerPacket: .max)),
        ("bpf-0", pcm(bytesPerPacket: 0, bytesPerFrame: 0)),
        ("channels-0", pcm(channels: 0)),
        ("rate-nan", pcm(.nan)),
        ("rate-inf", pcm(.infinity)),
        ("rate-neg", pcm(-48000)),
        ("rate-huge", pcm(1e300)),
        ("float-and-signed", pcm(flags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                 bytesPerPacket: 8, bytesPerFrame: 8, bits: 32)),
        ("float-16", pcm(flags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked)),
        ("ulaw-bpf-max", pcm(flags: 0, bytesPerPacket: .max, bytesPerFrame: .max, bits: 8, id: kAudioFormatULaw)),
    ]

    static func run(in directory: String) {
        for (name, format) in cases {
            let (output, input, created) = tryFormat(format, path: "\(directory)/\(name).wav")
            print("\(name): output=\(fourCharacterCode(output, quoted: false)) input=\(fourCharacterCode(input, quoted: false)) file=\(fourCharacterCode(created, quoted: false))")
            fflush(nil)
        }
        randomFormats(in: directory)
    }

    /// `format` given to AudioQueueNewOutput, AudioQueueNewInput and AudioFileCreateWithURL (a WAVE
    /// at `path`); whatever they create is disposed of or closed. Returns their results.
    static func tryFormat(_ format: AudioStreamBasicDescription, path: String) -> (OSStatus, OSStatus, OSStatus) {
        var format = format
        var queue: AudioQueueRef?
        let output = AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue)
        if output == noErr, let queue { AudioQueueDispose(queue, true) }
        queue = nil
        let input = AudioQueueNewInput(&format, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &queue)
        if input == noErr, let queue { AudioQueueDispose(queue, true) }
        var file: AudioFileID?
        let created = AudioFileCreateWithURL(URL(fileURLWithPath: path), kAudioFileWAVEType, &format, .eraseFile, &file)
        if created == noErr, let file { AudioFileClose(file) }
        return (output, input, created)
    }

    /// Values that break size arithmetic, for every field of a random ASBD.
    static let fieldValues: [UInt32] = [0, 1, 2, 3, 4, 7, 8, 16, 24, 32, 64, 255, 1024, 0xFFFF, 0x4000_0000, 0x7FFF_FFFF,
                                        0x8000_0000, 0xFFFF_FFFF]
    static let rates: [Double] = [0, -1, 1, 8000, 44100, 48000, 768_000, 1e300, .nan, .infinity, -.infinity, 1e-300]

    /// 2000 ASBDs of random fields (fixed seed) to the same three calls; prints a count of
    /// each result code. A queue given a format it accepts finds no server (none is started).
    static func randomFormats(in directory: String) {
        var random = SplitMix64(seed: 19)
        var outcomes: [String: Int] = [:]
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        for index in 0..<2000 {
            let format = AudioStreamBasicDescription(
                mSampleRate: pick(rates), mFormatID: pick([kAudioFormatLinearPCM, kAudioFormatULaw, kAudioFormatALaw, 0]),
                mFormatFlags: UInt32(truncatingIfNeeded: random.next()) & 0x7F, mBytesPerPacket: pick(fieldValues),
                mFramesPerPacket: pick([0, 1, 1, 2, 0xFFFF_FFFF]), mBytesPerFrame: pick(fieldValues),
                mChannelsPerFrame: pick(fieldValues), mBitsPerChannel: pick(fieldValues), mReserved: 0)
            let path = "\(directory)/random-\(index).wav"
            let (output, input, created) = tryFormat(format, path: path)
            unlink(path)
            for status in [output, input, created] { outcomes[fourCharacterCode(status, quoted: false), default: 0] += 1 }
        }
        print("random: " + outcomes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    }
}
