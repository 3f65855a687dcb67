import AudioToolbox
import Foundation
import Testing
import JackTestSupport
import QueueCore

@Suite struct AudioFilePropertyTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    private func info(_ file: AudioFileID?, _ id: AudioFilePropertyID) -> (OSStatus, size: UInt32, writable: UInt32) {
        var size: UInt32 = 0
        var writable: UInt32 = 9
        let status = AudioFileGetPropertyInfo(file!, id, &size, &writable)
        return (status, size, writable)
    }

    @Test func valuesAndSizesOfAnOpenedFile() throws {
        let url = scratch.url("props.wav")
        AF.makeFile(url, kAudioFileWAVEType, .s24, channels: 2, bigEndian: false, frames: 48000, rate: 48000)
        let (_, file) = AF.open(url)
        defer { AudioFileClose(file!) }

        let expectations: [(AudioFilePropertyID, UInt32)] = [
            (kAudioFilePropertyFileFormat, 4), (kAudioFilePropertyDataFormat, 40), (kAudioFilePropertyAudioDataPacketCount, 8),
            (kAudioFilePropertyAudioDataByteCount, 8), (kAudioFilePropertyMaximumPacketSize, 4),
            (kAudioFilePropertyPacketSizeUpperBound, 4), (kAudioFilePropertyEstimatedDuration, 8),
            (kAudioFilePropertyDataOffset, 8), (kAudioFilePropertyIsOptimized, 4), (kAudioFilePropertyBitRate, 4),
            (kAudioFilePropertyPacketToFrame, 24), (kAudioFilePropertyFrameToPacket, 24), (kAudioFilePropertyPacketToByte, 24),
            (kAudioFilePropertyByteToPacket, 24), (kAudioFilePropertyDeferSizeUpdates, 4), (kAudioFilePropertySourceBitDepth, 4),
            (kAudioFilePropertyChannelLayout, 12),
        ]
        for (id, size) in expectations {
            let result = info(file, id)
            expectStatus(result.0, noErr, "GetPropertyInfo \(fourCharacterCode(OSStatus(bitPattern: id)))")
            #expect(result.size == size, "size of \(fourCharacterCode(OSStatus(bitPattern: id)))")
            #expect(result.writable == 0, "\(fourCharacterCode(OSStatus(bitPattern: id))) is read-only in a file opened for reading")
        }
        #expect(AF.property(file, kAudioFilePropertyFileFormat, AudioFileTypeID.self).1 == kAudioFileWAVEType)
        #expect(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 48000)
        #expect(AF.property(file, kAudioFilePropertyAudioDataByteCount, UInt64.self).1 == 48000 * 6)
        #expect(AF.property(file, kAudioFilePropertyMaximumPacketSize, UInt32.self).1 == 6)
        #expect(AF.property(file, kAudioFilePropertyPacketSizeUpperBound, UInt32.self).1 == 6)
        #expect(AF.property(file, kAudioFilePropertyEstimatedDuration, Float64.self).1 == 1.0)
        #expect(AF.property(file, kAudioFilePropertyDataOffset, Int64.self).1 == 44, "a plain 16-byte fmt chunk WAVE header")
        #expect(AF.property(file, kAudioFilePropertyIsOptimized, UInt32.self).1 == 1)
        let bitRate = AF.property(file, kAudioFilePropertyBitRate, UInt32.self).1
        #expect(bitRate == UInt32(48000 * 48), "\(String(describing: bitRate))")
        #expect(AF.property(file, kAudioFilePropertySourceBitDepth, Int32.self).1 == 24)
        #expect(AF.property(file, kAudioFilePropertyDeferSizeUpdates, UInt32.self).1 == 0)
        expectStatus(AudioFileOptimize(file!), noErr, "Optimize")

        var frames = AudioFramePacketTranslation(mFrame: 0, mPacket: 1234, mFrameOffsetInPacket: 7)
        var size = UInt32(MemoryLayout<AudioFramePacketTranslation>.size)
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyPacketToFrame, &size, &frames), noErr, "PacketToFrame")
        #expect(frames.mFrame == 1234 && frames.mFrameOffsetInPacket == 0)
        frames = AudioFramePacketTranslation(mFrame: 999, mPacket: 0, mFrameOffsetInPacket: 0)
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyFrameToPacket, &size, &frames), noErr, "FrameToPacket")
        #expect(frames.mPacket == 999)
        var bytes = AudioBytePacketTranslation(mByte: 0, mPacket: 10, mByteOffsetInPacket: 0, mFlags: [])
        size = UInt32(MemoryLayout<AudioBytePacketTranslation>.size)
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyPacketToByte, &size, &bytes), noErr, "PacketToByte")
        #expect(bytes.mByte == 60)
        bytes = AudioBytePacketTranslation(mByte: 65, mPacket: 0, mByteOffsetInPacket: 0, mFlags: [])
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyByteToPacket, &size, &bytes), noErr, "ByteToPacket")
        #expect(bytes.mPacket == 10 && bytes.mByteOffsetInPacket == 5 && bytes.mFlags.rawValue == 0)
    }

    @Test func wrongSizesUnknownPropertiesAndReadOnlyProperties() throws {
        let (_, file) = AF.create(scratch.url("sizes.caf"), kAudioFileCAFType, Encoding.s16.format(channels: 2, bigEndian: true))
        defer { AudioFileClose(file!) }
        var format = AudioStreamBasicDescription()
        var size: UInt32 = 39
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyDataFormat, &size, &format), kAudioFileBadPropertySizeError, "39-byte ASBD")
        var count: UInt32 = 0
        size = 4
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyAudioDataPacketCount, &size, &count), kAudioFileBadPropertySizeError, "4-byte packet count")
        var big = [UInt8](repeating: 0, count: 64)
        size = 64
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyDataFormat, &size, &big), noErr, "a larger buffer")
        #expect(size == 40, "ioDataSize returns the value's size")
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyDataFormat, 36, big), kAudioFileBadPropertySizeError, "set a 36-byte ASBD")
        var one: UInt32 = 1
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyDeferSizeUpdates, 8, &one), kAudioFileBadPropertySizeError, "8-byte UInt32")

        for id in [AudioFilePropertyID(0x7A7A_7A7A), kAudioFilePropertyMarkerList,
                   kAudioFilePropertyRegionList, kAudioFilePropertyChunkIDs, kAudioFilePropertyID3Tag, kAudioFilePropertyFormatList] {
            expectStatus(info(file, id).0, kAudioFileUnsupportedPropertyError, "info \(fourCharacterCode(OSStatus(bitPattern: id)))")
            size = 64
            expectStatus(AudioFileGetProperty(file!, id, &size, &big), kAudioFileUnsupportedPropertyError, "get \(fourCharacterCode(OSStatus(bitPattern: id)))")
            expectStatus(AudioFileSetProperty(file!, id, 4, big), kAudioFileUnsupportedPropertyError, "set \(fourCharacterCode(OSStatus(bitPattern: id)))")
        }
        var type = kAudioFileWAVEType
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyFileFormat, 4, &type), kAudioFileOperationNotSupportedError, "set FileFormat")
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyIsOptimized, 4, &one), kAudioFileOperationNotSupportedError, "set IsOptimized")
        #expect(info(file, kAudioFilePropertyDataFormat).writable == 1, "DataFormat is writable before audio is written")
        #expect(info(file, kAudioFilePropertyFileFormat).writable == 0)
    }

    /// Listing 2-7 (recording: copy the queue's cookie to the file) and Listing 3-14 (playback:
    /// copy the file's cookie, if any, to the queue), as the guides write them.
    @Test func magicCookieListings() throws {
        let url = scratch.url("cookie.aiff")
        let (_, file) = AF.create(url, kAudioFileAIFFType, Encoding.s16.format(channels: 2, bigEndian: true))
        defer { AudioFileClose(file!) }

        // Listing 3-14: linear PCM has no cookie, so the queue is not given one.
        var cookieSize = UInt32(MemoryLayout<UInt32>.size)
        let couldNotGetProperty = AudioFileGetPropertyInfo(file!, kAudioFilePropertyMagicCookieData, &cookieSize, nil)
        expectStatus(couldNotGetProperty, kAudioFileUnsupportedPropertyError, "GetPropertyInfo(MagicCookieData) without a cookie")
        var probe = [UInt8](repeating: 0, count: 16)
        var probeSize: UInt32 = 16
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyMagicCookieData, &probeSize, &probe),
                     kAudioFileUnsupportedPropertyError, "GetProperty(MagicCookieData) without a cookie")

        // Listing 2-7: a queue's cookie is stored with AudioFileSetProperty...
        let queueCookie: [UInt8] = [0xCA, 0xFE, 0xF0, 0x0D, 1, 2, 3]
        let result = AudioFileSetProperty(file!, kAudioFilePropertyMagicCookieData, UInt32(queueCookie.count), queueCookie)
        expectStatus(result, noErr, "SetProperty(MagicCookieData)")
        // ...and Listing 3-14's path then finds it.
        cookieSize = UInt32(MemoryLayout<UInt32>.size)
        expectStatus(AudioFileGetPropertyInfo(file!, kAudioFilePropertyMagicCookieData, &cookieSize, nil), noErr, "info with a cookie")
        #expect(cookieSize == UInt32(queueCookie.count))
        let magicCookie = UnsafeMutableRawPointer.allocate(byteCount: Int(cookieSize), alignment: 1)
        defer { magicCookie.deallocate() }
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyMagicCookieData, &cookieSize, magicCookie), noErr, "get the cookie")
        #expect(Array(UnsafeRawBufferPointer(start: magicCookie, count: Int(cookieSize))) == queueCookie)
        var small: UInt32 = 3
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyMagicCookieData, &small, magicCookie),
                     kAudioFileBadPropertySizeError, "a buffer smaller than the cookie")
    }

    @Test func dataFormatCanChangeUntilAudioIsWritten() throws {
        let url = scratch.url("change.caf")
        let (_, file) = AF.create(url, kAudioFileCAFType, Encoding.s16.format(channels: 2, bigEndian: true))
        var float = Encoding.f32.format(channels: 3, rate: 96000, bigEndian: false)
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyDataFormat, 40, &float), noErr, "set before audio")
        #expect(AF.dataFormat(file)?.matches(float) == true)
        var ulawInAIFF = Encoding.u8.format(channels: 1, bigEndian: false)
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyDataFormat, 40, &ulawInAIFF), kAudioFileUnsupportedDataFormatError, "unsigned in CAF")
        let signal = Encoding.f32.signal(frames: 100, channels: 3, bigEndian: false)
        expectStatus(AF.write(file, signal, at: 0, bytesPerPacket: 12).0, noErr, "write")
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyDataFormat, 40, &float), kAudioFileOperationNotSupportedError, "set after audio")
        #expect(info(file, kAudioFilePropertyDataFormat).writable == 0)
        AudioFileClose(file!)
        let (_, reader) = AF.open(url)
        defer { AudioFileClose(reader!) }
        #expect(AF.dataFormat(reader)?.matches(float) == true)
        #expect(AF.read(reader, from: 0, packets: 100, bytesPerPacket: 12).1 == signal)
    }

    private func layout(_ file: AudioFileID?) -> (tag: AudioChannelLayoutTag, labels: [AudioChannelLabel])? {
        var size: UInt32 = 0
        guard AudioFileGetPropertyInfo(file!, kAudioFilePropertyChannelLayout, &size, nil) == noErr else { return nil }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Int(size), alignment: 8)
        defer { buffer.deallocate() }
        guard AudioFileGetProperty(file!, kAudioFilePropertyChannelLayout, &size, buffer) == noErr else { return nil }
        let layout = buffer.assumingMemoryBound(to: AudioChannelLayout.self)
        let count = Int(layout.pointee.mNumberChannelDescriptions)
        #expect(Int(size) == 12 + 20 * count)
        let labels = (0..<count).map { buffer.load(fromByteOffset: 12 + 20 * $0, as: UInt32.self) }
        return (layout.pointee.mChannelLayoutTag, labels)
    }

    /// An AudioChannelLayout with channel descriptions, as bytes.
    private func describedLayout(_ labels: [AudioChannelLabel]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 12 + 20 * labels.count)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: kAudioChannelLayoutTag_UseChannelDescriptions, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: UInt32(labels.count), toByteOffset: 8, as: UInt32.self)
            for (index, label) in labels.enumerated() { raw.storeBytes(of: label, toByteOffset: 12 + 20 * index, as: UInt32.self) }
        }
        return bytes
    }

    @Test func channelLayoutsDefaultAndStored() throws {
        let mono = scratch.url("mono.wav"), stereo = scratch.url("stereo.aiff"), four = scratch.url("four.w64")
        AF.makeFile(mono, kAudioFileWAVEType, .s16, channels: 1, bigEndian: false, frames: 10)
        AF.makeFile(stereo, kAudioFileAIFFType, .s16, channels: 2, bigEndian: true, frames: 10)
        AF.makeFile(four, kAudioFileWave64Type, .s16, channels: 4, bigEndian: false, frames: 10)
        #expect(layout(AF.open(mono).1)?.tag == kAudioChannelLayoutTag_Mono)
        #expect(layout(AF.open(stereo).1)?.tag == kAudioChannelLayoutTag_Stereo)
        #expect(layout(AF.open(four).1)?.tag == kAudioChannelLayoutTag_DiscreteInOrder | 4)

        let labels = [kAudioChannelLabel_Left, kAudioChannelLabel_Right, kAudioChannelLabel_LFEScreen]
        for (name, type, bigEndian) in [("3.caf", kAudioFileCAFType, true), ("3.wav", kAudioFileWAVEType, false),
                                        ("3.aiff", kAudioFileAIFFType, true), ("3.rf64", kAudioFileRF64Type, false)] {
            let url = scratch.url(name)
            let (_, file) = AF.create(url, type, Encoding.s16.format(channels: 3, bigEndian: bigEndian))
            let bytes = describedLayout(labels)
            expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyChannelLayout, UInt32(bytes.count), bytes), noErr, "\(name): set layout")
            #expect(layout(file)?.labels == labels)
            expectStatus(AF.write(file, Encoding.s16.signal(frames: 10, channels: 3, bigEndian: bigEndian), at: 0, bytesPerPacket: 6).0, noErr, "write")
            AudioFileClose(file!)
            let (_, reader) = AF.open(url)
            #expect(layout(reader)?.labels == labels, "\(name): the layout is stored in the file")
            #expect(AF.property(reader, kAudioFilePropertyFileFormat, UInt32.self).1 == type)
            AudioFileClose(reader!)
        }

        // A container without a place for it keeps the layout for this AudioFileID only.
        let (_, flac) = AF.create(scratch.url("3.flac"), kAudioFileFLACType, Encoding.s16.format(channels: 3, bigEndian: false))
        defer { AudioFileClose(flac!) }
        let bytes = describedLayout(labels)
        expectStatus(AudioFileSetProperty(flac!, kAudioFilePropertyChannelLayout, UInt32(bytes.count), bytes), noErr, "FLAC: set layout")
        #expect(layout(flac)?.labels == labels)
        let two = describedLayout([kAudioChannelLabel_Left, kAudioChannelLabel_Right])
        expectStatus(AudioFileSetProperty(flac!, kAudioFilePropertyChannelLayout, UInt32(two.count), two), kAudio_ParamError, "2 labels, 3 channels")
        expectStatus(AudioFileSetProperty(flac!, kAudioFilePropertyChannelLayout, UInt32(bytes.count - 1), bytes),
                     kAudioFileBadPropertySizeError, "a description cut short")
    }

    /// DeferSizeUpdates 0 (the default): the header is current after every write, so a take
    /// cut short by a crash is a valid file. 1: the header is brought up to date at close.
    @Test func sizeUpdatesFollowDeferSizeUpdates() throws {
        let url = scratch.url("live.wav")
        let (_, file) = AF.create(url, kAudioFileWAVEType, Encoding.s16.format(channels: 2, bigEndian: false))
        let signal = Encoding.s16.signal(frames: 1000, channels: 2, bigEndian: false)
        _ = AF.write(file, signal, at: 0, bytesPerPacket: 4)
        let (_, watcher) = AF.open(url)
        #expect(AF.property(watcher, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 1000, "header current while writing")
        AudioFileClose(watcher!)

        var defer1: UInt32 = 1
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyDeferSizeUpdates, 4, &defer1), noErr, "defer")
        #expect(AF.property(file, kAudioFilePropertyDeferSizeUpdates, UInt32.self).1 == 1)
        _ = AF.write(file, signal, at: 1000, bytesPerPacket: 4)
        let (_, stale) = AF.open(url)
        #expect(AF.property(stale, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 1000, "header not updated while deferred")
        AudioFileClose(stale!)
        expectStatus(AudioFileClose(file!), noErr, "close")
        let (_, closed) = AF.open(url)
        defer { AudioFileClose(closed!) }
        #expect(AF.property(closed, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 2000, "close brings it up to date")
    }

    /// One file written from a thread (as a recording callback does) while others read its
    /// properties and packets: every call returns a result, the file ends complete.
    @Test func oneFileUsedFromSeveralThreads() async throws {
        let url = scratch.url("threads.caf")
        let (_, created) = AF.create(url, kAudioFileCAFType, Encoding.s16.format(channels: 2, bigEndian: true))
        let file = try #require(created)
        let id = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(file)))
        let signal = Encoding.s16.signal(frames: 20000, channels: 2, bigEndian: true)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                let file = OpaquePointer(bitPattern: id)
                for chunk in 0..<20 {
                    let slice = Array(signal[chunk * 4000..<(chunk + 1) * 4000])
                    expectStatus(AF.write(file, slice, at: Int64(chunk * 1000), bytesPerPacket: 4).0, noErr, "write \(chunk)")
                }
            }
            for _ in 0..<3 {
                group.addTask {
                    let file = OpaquePointer(bitPattern: id)
                    var last: UInt64 = 0
                    for _ in 0..<200 {
                        let count = AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 ?? 0
                        #expect(count >= last && count % 1000 == 0, "packet counts grow a whole write at a time")
                        last = count
                        if count > 0 {
                            let (status, bytes) = AF.read(file, from: 0, packets: Int(count), bytesPerPacket: 4)
                            #expect(status == noErr && bytes == Array(signal.prefix(bytes.count)))
                        }
                    }
                }
            }
        }
        expectStatus(AudioFileClose(file), noErr, "close")
        let (_, reader) = AF.open(url)
        defer { AudioFileClose(reader!) }
        #expect(AF.read(reader, from: 0, packets: 20000, bytesPerPacket: 4).1 == signal)
    }
}
