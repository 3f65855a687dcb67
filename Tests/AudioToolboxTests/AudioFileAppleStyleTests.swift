import AudioToolbox
import Foundation
import Testing
import JackTestSupport

// Swift written the way it is on macOS and iOS: `url as CFURL`, `.eraseFile`,
// `.readPermission`, `MemoryLayout` sizes and `&` out-parameters. It compiles unchanged here.

/// Records two seconds of a stereo ramp into an AIFF file, as the recording guide does.
private func recordTake(to url: URL) -> OSStatus {
    var recordFormat = AudioStreamBasicDescription()
    recordFormat.mFormatID = kAudioFormatLinearPCM
    recordFormat.mSampleRate = 44100.0
    recordFormat.mChannelsPerFrame = 2
    recordFormat.mBitsPerChannel = 16
    recordFormat.mBytesPerPacket = recordFormat.mChannelsPerFrame * UInt32(MemoryLayout<Int16>.size)
    recordFormat.mBytesPerFrame = recordFormat.mBytesPerPacket
    recordFormat.mFramesPerPacket = 1
    recordFormat.mFormatFlags = kLinearPCMFormatFlagIsBigEndian | kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked

    var audioFile: AudioFileID?
    var status = AudioFileCreateWithURL(url as CFURL, kAudioFileAIFFType, &recordFormat, .eraseFile, &audioFile)
    guard status == noErr, let audioFile else { return status }
    defer { AudioFileClose(audioFile) }

    var currentPacket: Int64 = 0
    let packetsPerBuffer = 4410
    for buffer in 0..<20 {
        let samples = (0..<packetsPerBuffer * 2).map { Int16(truncatingIfNeeded: (buffer * packetsPerBuffer * 2 + $0) &* 31).bigEndian }
        var ioNumPackets = UInt32(packetsPerBuffer)
        status = samples.withUnsafeBytes { bytes in
            AudioFileWritePackets(audioFile, false, UInt32(bytes.count), nil, currentPacket, &ioNumPackets, bytes.baseAddress!)
        }
        guard status == noErr else { return status }
        currentPacket += Int64(ioNumPackets)
    }
    return noErr
}

@Suite struct AudioFileAppleStyleTests {
    @Test func codeWrittenForApplePlatformsRuns() throws {
        let directory = try Scratch()
        let url = directory.url.appendingPathComponent("take.aiff")
        #expect(recordTake(to: url) == noErr)

        var fileID: AudioFileID?
        var status = AudioFileOpenURL(url as CFURL, .readPermission, kAudioFileAIFFType, &fileID)
        #expect(status == noErr)
        let file = try #require(fileID)
        defer { AudioFileClose(file) }

        var asbd = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        status = AudioFileGetProperty(file, kAudioFilePropertyDataFormat, &size, &asbd)
        #expect(status == noErr)
        #expect(asbd.mSampleRate == 44100 && asbd.mChannelsPerFrame == 2 && asbd.mBitsPerChannel == 16)
        #expect(asbd.mFormatFlags & kAudioFormatFlagIsBigEndian != 0)

        var maxPacketSize: UInt32 = 0
        var propertySize = UInt32(MemoryLayout.size(ofValue: maxPacketSize))
        status = AudioFileGetProperty(file, kAudioFilePropertyPacketSizeUpperBound, &propertySize, &maxPacketSize)
        #expect(status == noErr && maxPacketSize == 4)

        var packetCount: UInt64 = 0
        size = UInt32(MemoryLayout<UInt64>.size)
        #expect(AudioFileGetProperty(file, kAudioFilePropertyAudioDataPacketCount, &size, &packetCount) == noErr)
        #expect(packetCount == 88200)

        var duration: Float64 = 0
        size = UInt32(MemoryLayout<Float64>.size)
        #expect(AudioFileGetProperty(file, kAudioFilePropertyEstimatedDuration, &size, &duration) == noErr)
        #expect(duration == 2.0)

        var cookieSize: UInt32 = 0
        let hasCookie = AudioFileGetPropertyInfo(file, kAudioFilePropertyMagicCookieData, &cookieSize, nil) == noErr
        #expect(!hasCookie, "linear PCM has no magic cookie")

        var layout = AudioChannelLayout()
        size = UInt32(MemoryLayout<AudioChannelLayout>.size)
        #expect(AudioFileGetProperty(file, kAudioFilePropertyChannelLayout, &size, &layout) == noErr)
        #expect(layout.mChannelLayoutTag == kAudioChannelLayoutTag_Stereo)

        // The playback guide's read loop.
        var buffer = [UInt8](repeating: 0, count: Int(maxPacketSize) * 8192)
        var startingPacket: Int64 = 0
        var total = 0
        var first: [UInt8] = []
        while true {
            var numBytes = UInt32(buffer.count)
            var numPackets = UInt32(8192)
            status = buffer.withUnsafeMutableBytes {
                AudioFileReadPacketData(file, false, &numBytes, nil, startingPacket, &numPackets, $0.baseAddress)
            }
            if first.isEmpty { first = Array(buffer.prefix(8)) }
            total += Int(numPackets)
            startingPacket += Int64(numPackets)
            if status == kAudioFileEndOfFileError || numPackets == 0 { break }
            #expect(status == noErr)
        }
        #expect(total == 88200)
        let expected = (0..<4).flatMap { index -> [UInt8] in
            let value = UInt16(bitPattern: Int16(truncatingIfNeeded: index &* 31))
            return [UInt8(value >> 8), UInt8(value & 0xFF)]
        }
        #expect(first == expected, "big-endian samples as recorded")
    }
}
