import AudioToolbox
import Foundation
import Testing
import JackTestSupport

/// ExtAudioFile's result codes for bad input (Apple's values), and Seek/Tell on linear PCM.
@Suite struct ExtAudioFileErrorTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    func makeWAV(frames: Int, type: AudioFileTypeID = kAudioFileWAVEType, name: String = "in.wav") throws -> (URL, [UInt8]) {
        let url = scratch.url(name)
        let bytes = EAF.int16Bytes(EAF.floats(frames: frames, channels: 2))
        let (created, out) = EAF.create(url, type, EAF.pcm(44100, channels: 2))
        try #require(created == noErr)
        expectStatus(EAF.write(out, planes: [bytes], client: EAF.pcm(44100, channels: 2)), noErr)
        expectStatus(ExtAudioFileDispose(out!), noErr)
        return (url, bytes)
    }

    @Test(arguments: [(kAudioFileWAVEType, "in.wav"), (kAudioFileFLACType, "in.flac")])
    func seekAndTellAreExactInWAVAndFLAC(_ type: AudioFileTypeID, _ name: String) throws {
        let (url, bytes) = try makeWAV(frames: 20_000, type: type, name: name)
        let (_, input) = EAF.open(url)
        defer { ExtAudioFileDispose(input!) }
        let client = EAF.pcm(44100, channels: 2)
        for target in [12_345, 0, 19_999, 7] {
            expectStatus(ExtAudioFileSeek(input!, Int64(target)), noErr)
            let (status, planes) = EAF.read(input, client: client, chunk: 333, limit: 1000)
            expectStatus(status, noErr)
            #expect(planes[0] == Array(bytes[(target * 4)..<min(bytes.count, (target + 1000) * 4)]), "frames from \(target)")
            var told: Int64 = 0
            expectStatus(ExtAudioFileTell(input!, &told), noErr)
            #expect(told == Int64(min(20_000, target + 1000)))
        }
        expectStatus(ExtAudioFileSeek(input!, 20_000), noErr, "the end is a place to seek to")
        let (status, planes) = EAF.read(input, client: client, limit: 10)
        expectStatus(status, noErr)
        #expect(planes[0].isEmpty, "nothing after the end")
        #expect(ExtAudioFileSeek(input!, 20_001) == kExtAudioFileError_InvalidSeek)
    }

    @Test func badInputsReturnTheDocumentedCodes() throws {
        let (url, _) = try makeWAV(frames: 1000)
        var file: ExtAudioFileRef?
        #expect(ExtAudioFileOpenURL(scratch.url("absent.wav"), &file) == kAudioFileFileNotFoundError)
        #expect(file == nil)
        let (_, input) = EAF.open(url)
        defer { ExtAudioFileDispose(input!) }

        var aac = EAF.compressed(kAudioFormatMPEG4AAC, 44100, channels: 2)
        #expect(ExtAudioFileSetProperty(input!, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &aac)
                == kExtAudioFileError_NonPCMClientFormat)
        var format = EAF.pcm(44100, channels: 2)
        #expect(ExtAudioFileSetProperty(input!, kExtAudioFileProperty_ClientDataFormat, 12, &format) == kExtAudioFileError_InvalidPropertySize)
        var size: UInt32 = 4
        var small: UInt32 = 0
        #expect(ExtAudioFileGetProperty(input!, kExtAudioFileProperty_FileDataFormat, &size, &small) == kExtAudioFileError_InvalidPropertySize)
        size = 8
        var value: UInt64 = 0
        #expect(ExtAudioFileGetProperty(input!, 0x7A7A7A7A, &size, &value) == kExtAudioFileError_InvalidProperty)
        #expect(ExtAudioFileSetProperty(input!, kExtAudioFileProperty_FileLengthFrames, 8, &value) == kExtAudioFileError_InvalidProperty)
        #expect(ExtAudioFileGetProperty(input!, kExtAudioFileProperty_PacketTable, &size, &value) == kExtAudioFileError_InvalidProperty,
                "a linear PCM file has no packet table")

        // A mono layout for a stereo client.
        var mono = AudioChannelLayout()
        mono.mChannelLayoutTag = kAudioChannelLayoutTag_Mono
        #expect(ExtAudioFileSetProperty(input!, kExtAudioFileProperty_ClientChannelLayout, UInt32(MemoryLayout<AudioChannelLayout>.size), &mono)
                == kExtAudioFileError_InvalidChannelMap)

        var frames: UInt32 = 10
        #expect(ExtAudioFileSeek(input!, 1001) == kExtAudioFileError_InvalidSeek)
        // Two buffers for an interleaved client.
        let a = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16), b = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { a.deallocate(); b.deallocate() }
        frames = 10
        let status = EAF.withBufferList([a, b], bytes: 64, channelsPerBuffer: 1) { ExtAudioFileRead(input!, &frames, $0) }
        #expect(status == kAudio_ParamError)
        #expect(EAF.withBufferList([a], bytes: 64, channelsPerBuffer: 2) { ExtAudioFileWrite(input!, 1, $0) } == kExtAudioFileError_InvalidOperationOrder,
                "a file opened for reading is not written")
    }

    @Test func compressedFilesNeedAClientFormatAndWritingFilesDoNotSeek() throws {
        let url = scratch.url("out.caf")
        let (created, out) = EAF.create(url, kAudioFileCAFType, EAF.compressed(kAudioFormatAppleLossless, 44100, channels: 2, flags: 1))
        try #require(created == noErr)
        let a = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { a.deallocate() }
        #expect(EAF.withBufferList([a], bytes: 64, channelsPerBuffer: 2) { ExtAudioFileWrite(out!, 16, $0) } == kExtAudioFileError_InvalidOperationOrder)
        #expect(ExtAudioFileSeek(out!, 0) == kExtAudioFileError_InvalidSeek)
        expectStatus(ExtAudioFileDispose(out!), noErr)
        #expect(ExtAudioFileDispose(out!) == kAudio_ParamError, "a disposed ref is not live")

        var format = EAF.pcm(44100, channels: 2)
        var file: ExtAudioFileRef?
        #expect(ExtAudioFileCreateWithURL(url, kAudioFileCAFType, &format, nil, 0, &file) == OSStatus(dupFNErr), "no kAudioFileFlags_EraseFile")
        #expect(ExtAudioFileWrapAudioFileID(OpaquePointer(bitPattern: 0x1234)!, false, &file) == kAudioFileNotOpenError, "not an AudioFileID")
    }

    /// ExtAudioFileWrapAudioFileID reads through a file the caller opened, and leaves it open.
    @Test func wrappedFileStaysOpen() throws {
        let (url, bytes) = try makeWAV(frames: 3000)
        var audioFile: AudioFileID?
        expectStatus(AudioFileOpenURL(url, .readPermission, 0, &audioFile), noErr)
        var file: ExtAudioFileRef?
        expectStatus(ExtAudioFileWrapAudioFileID(audioFile!, false, &file), noErr)
        let (status, planes) = EAF.read(file, client: EAF.pcm(44100, channels: 2))
        expectStatus(status, noErr)
        #expect(planes[0] == bytes)
        #expect(EAF.property(file, kExtAudioFileProperty_AudioFile, AudioFileID?.self).1 == audioFile)
        expectStatus(ExtAudioFileDispose(file!), noErr)
        expectStatus(AudioFileClose(audioFile!), noErr, "the AudioFileID is still open")
    }
}

/// A damaged AAC packet: its frames come back (as silence) and the decoder's result is what
/// the next ExtAudioFileRead returns, not lost.
@Suite struct ExtAudioFileDamageTests {
    @Test func aPacketThatDoesNotDecodeIsReported() throws {
        let scratch = try Scratch()
        let url = scratch.url("damaged.caf")
        let client = EAF.pcm(44100, channels: 2, float: true, bits: 32)
        let (created, out) = EAF.create(url, kAudioFileCAFType, EAF.compressed(kAudioFormatMPEG4AAC, 44100, channels: 2))
        try #require(created == noErr)
        expectStatus(EAF.setClient(out, client), noErr)
        expectStatus(EAF.write(out, planes: [EAF.floatBytes(EAF.floats(frames: 44100, channels: 2))], client: client), noErr)
        expectStatus(ExtAudioFileDispose(out!), noErr)
        var bytes = try [UInt8](Data(contentsOf: url))
        let data = try #require((0..<bytes.count - 4).first { bytes[$0..<$0 + 4] == [0x64, 0x61, 0x74, 0x61] }, "the data chunk")
        let middle = data + (bytes.count - data) / 3
        try #require(middle + 2000 < bytes.count)
        for i in middle..<(middle + 2000) { bytes[i] = 0xFF }
        try Data(bytes).write(to: url)

        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        expectStatus(EAF.setClient(input, client), noErr)
        let (status, planes) = EAF.read(input, client: client, chunk: 1024)
        #expect(status != noErr, "the damage is reported (\(planes[0].count / 8) frames read before it)")
        #expect(planes[0].count / 8 > 0)
    }
}
