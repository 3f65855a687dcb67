import AudioToolbox
import Foundation
import Testing

/// MP3 and ADTS files made by ffmpeg's command line open as packets, as on Apple platforms:
/// '.mp3' / 'aac ' data formats, the packets ffprobe lists byte for byte with their
/// descriptions, and a packet table that says what ffmpeg's own decode keeps (the LAME/Xing
/// header's encoder delay and padding).
extension AudioFilePacketTests {
    struct MP3Case: Sendable, CustomTestStringConvertible {
        let name: String
        let codec: [String]
        let rate: Int
        let channels: Int
        let framesPerPacket: UInt32
        /// Whether the file has a LAME/Xing header (gapless information).
        let gapless: Bool
        var testDescription: String { name }
    }

    static let mp3Cases = [
        // MPEG-1 layer III, constant bit rate, ID3v2 tag and LAME header (ffmpeg's defaults).
        MP3Case(name: "cbr.mp3", codec: ["-c:a", "libmp3lame", "-b:a", "192k"], rate: 48000, channels: 2,
                framesPerPacket: 1152, gapless: true),
        // MPEG-2 layer III (22.05 kHz: 576 frames a packet), variable bit rate, mono.
        MP3Case(name: "vbr.mp3", codec: ["-c:a", "libmp3lame", "-q:a", "4"], rate: 22050, channels: 1,
                framesPerPacket: 576, gapless: true),
        // No ID3 tag and no LAME header: the file starts with a frame and names no delay.
        MP3Case(name: "bare.mp3", codec: ["-c:a", "libmp3lame", "-b:a", "128k", "-write_xing", "0", "-id3v2_version", "0"],
                rate: 44100, channels: 2, framesPerPacket: 1152, gapless: false),
    ]

    @Test(arguments: mp3Cases)
    func mp3FromFFmpegReadsAsFFprobeListsIt(_ mp3: MP3Case) throws {
        let path = try makeFile(mp3.name, codec: mp3.codec, rate: mp3.rate, channels: mp3.channels, seconds: 1.5)
        let (status, file) = AF.open(URL(fileURLWithPath: path))
        expectStatus(status, noErr, "open")
        let opened = try #require(file)
        defer { AudioFileClose(opened) }
        #expect(AF.property(opened, kAudioFilePropertyFileFormat, UInt32.self).1 == kAudioFileMP3Type)
        let format = try #require(AF.dataFormat(opened))
        #expect(format.mFormatID == kAudioFormatMPEGLayer3 && format.mFramesPerPacket == mp3.framesPerPacket
                && format.mChannelsPerFrame == UInt32(mp3.channels) && format.mSampleRate == Double(mp3.rate)
                && format.mBytesPerPacket == 0 && format.mBytesPerFrame == 0, "\(format)")
        let read = readAll(opened)
        expectSamePackets(read, try probePackets(path), mp3.name)
        #expect(read.descriptions.allSatisfy { $0.mVariableFramesInPacket == 0 })
        let maximum = try #require(AF.property(opened, kAudioFilePropertyMaximumPacketSize, UInt32.self).1)
        #expect(maximum == UInt32(read.packets.map(\.count).max() ?? 0))
        #expect((AF.property(opened, kAudioFilePropertyPacketSizeUpperBound, UInt32.self).1 ?? 0) >= maximum)
        #expect(AF.property(opened, kAudioFilePropertyAudioDataByteCount, UInt64.self).1 == UInt64(read.packets.map(\.count).reduce(0, +)))
        expectStatus(AF.property(opened, kAudioFilePropertyMagicCookieData, UInt8.self).0, kAudioFileUnsupportedPropertyError,
                     "MP3 has no magic cookie")

        // The packet table: ffmpeg's decode is the packets' frames less priming and remainder.
        let table = try #require(packetTable(opened))
        let decodedFrames = try decode(path).count / mp3.channels
        let packetFrames = Int64(read.packets.count) * Int64(mp3.framesPerPacket)
        #expect(packetFrames == table.mNumberValidFrames + Int64(table.mPrimingFrames) + Int64(table.mRemainderFrames))
        if mp3.gapless {
            // LAME's delay (576) and the decoder's (529); the valid frames are exactly those encoded.
            #expect(table.mPrimingFrames == 1105, "priming \(table.mPrimingFrames)")
            #expect(table.mNumberValidFrames == Int64(mp3.rate * 3 / 2), "valid \(table.mNumberValidFrames)")
        } else {
            #expect(table.mPrimingFrames == 0 && table.mRemainderFrames == 0)
        }
        #expect(table.mNumberValidFrames == Int64(decodedFrames), "ffmpeg decodes \(decodedFrames) frames")
        let duration = try #require(AF.property(opened, kAudioFilePropertyEstimatedDuration, Float64.self).1)
        #expect(abs(duration - Double(table.mNumberValidFrames) / Double(mp3.rate)) < 1e-9)

        // Opened for writing: MP3 files of packets are read only.
        var writable: AudioFileID?
        expectStatus(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readWritePermission, 0, &writable),
                     kAudioFileOperationNotSupportedError, "read-write open")
    }

    /// An ADTS stream from ffmpeg (`-f adts`): 'aac ' packets without their 7-byte headers,
    /// the AudioSpecificConfig the headers describe as the cookie, and no priming (ADTS cannot
    /// say; ffmpeg's decode keeps the encoder delay too).
    @Test func adtsFromFFmpegReadsAsFFprobeListsIt() throws {
        let path = try makeFile("tone.aac", codec: ["-c:a", "aac", "-b:a", "96k", "-f", "adts"], rate: 44100, seconds: 1.5)
        let (status, file) = AF.open(URL(fileURLWithPath: path))
        expectStatus(status, noErr, "open")
        let opened = try #require(file)
        defer { AudioFileClose(opened) }
        #expect(AF.property(opened, kAudioFilePropertyFileFormat, UInt32.self).1 == kAudioFileAAC_ADTSType)
        let format = try #require(AF.dataFormat(opened))
        #expect(format.mFormatID == kAudioFormatMPEG4AAC && format.mFramesPerPacket == 1024 && format.mSampleRate == 44100)
        let read = readAll(opened)
        let probed = try probePackets(path)
        #expect(probed.map(\.size) == read.packets.map { $0.count + 7 }, "ADTS frames are header + packet")
        let table = try #require(packetTable(opened))
        #expect(table.mPrimingFrames == 0 && table.mRemainderFrames == 0)
        #expect(table.mNumberValidFrames == Int64(try decode(path).count / 2))
        #expect(AF.property(opened, kAudioFilePropertyMaximumPacketSize, UInt32.self).1 == UInt32(read.packets.map(\.count).max() ?? 0))
        let esds = try #require(cookie(opened))
        #expect(esds.first == 0x03, "the cookie is an ES_Descriptor")
    }
}
