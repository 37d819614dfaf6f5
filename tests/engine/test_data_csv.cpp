// The CSV/TSV reader (engine/data/csv_reader.h): RFC 4180 quoting, line ends, BOM, delimiters,
// gzip, skip-rows and header handling, and each malformed input's message (file and line).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/csv_reader.h"
#include "tests/common/test_deps.h"

using namespace kiln;
using namespace kiln::data;
namespace fs = std::filesystem;

namespace {

using Rows = std::vector<std::vector<std::string>>;

CsvTable parse(const std::string& text, CsvOptions o = {}) { return parse_csv(text, o, "t.csv"); }

// The IoError message parse_csv gives for `text` ("" when it parses).
std::string error_of(const std::string& text, CsvOptions o = {}) {
  try {
    parse(text, o);
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

uint32_t crc32(const std::string& b) {
  uint32_t c = 0xffffffffu;
  for (unsigned char x : b) {
    c ^= x;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// A gzip member holding `text` in one stored (uncompressed) deflate block (RFC 1951, 1952).
std::string gzip_stored(const std::string& text) {
  std::string g = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, '\xff'};
  const auto n = static_cast<uint16_t>(text.size());
  g += '\x01';  // BFINAL, BTYPE = stored
  g += static_cast<char>(n & 0xff), g += static_cast<char>(n >> 8);
  g += static_cast<char>(~n & 0xff), g += static_cast<char>((~n >> 8) & 0xff);
  g += text;
  const uint32_t crc = crc32(text), size = static_cast<uint32_t>(text.size());
  for (int i = 0; i < 4; ++i) g += static_cast<char>((crc >> (8 * i)) & 0xff);
  for (int i = 0; i < 4; ++i) g += static_cast<char>((size >> (8 * i)) & 0xff);
  return g;
}

std::string temp_file(const std::string& name, const std::string& bytes) {
  const fs::path p = fs::temp_directory_path() / ("kiln_csv_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

}  // namespace

TEST(CsvReader, HeaderAndRows) {
  CsvTable t = parse("a,b,c\n1,2,3\n4,5,6\n");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(t.rows, (Rows{{"1", "2", "3"}, {"4", "5", "6"}}));
  EXPECT_EQ(t.lines, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.delimiter, ',');
}

TEST(CsvReader, QuotesEscapedQuotesAndLineBreaksInFields) {
  CsvTable t = parse("name,note\n\"Smith, J\",\"said \"\"hi\"\"\"\n\"two\nlines\",x\nlast,\"\"\n");
  EXPECT_EQ(t.rows, (Rows{{"Smith, J", "said \"hi\""}, {"two\nlines", "x"}, {"last", ""}}));
  EXPECT_EQ(t.lines, (std::vector<int64_t>{2, 3, 5}));  // the quoted line break counts
}

TEST(CsvReader, CrlfEmptyFieldsBlankLinesAndNoFinalNewline) {
  CsvTable t = parse("a,b,c\r\n1,,3\r\n\r\n,,\r\n7,8,9");
  EXPECT_EQ(t.rows, (Rows{{"1", "", "3"}, {"", "", ""}, {"7", "8", "9"}}));
  EXPECT_EQ(t.lines, (std::vector<int64_t>{2, 4, 5}));
}

TEST(CsvReader, ByteOrderMarkIsDropped) {
  CsvTable t = parse("\xEF\xBB\xBFx,y\n1,2\n");
  EXPECT_EQ(t.columns[0], "x");
}

TEST(CsvReader, DelimiterDetectedOrGiven) {
  EXPECT_EQ(parse("a\tb\n1\t2\n").delimiter, '\t');
  EXPECT_EQ(parse("a;b\n1,5;2,5\n").rows[0], (std::vector<std::string>{"1,5", "2,5"}));
  EXPECT_EQ(parse_csv("a,b\n1,2\n", {}, "t.tsv").delimiter, '\t');  // by extension: one column "a,b"
  CsvOptions pipe;
  pipe.delimiter = '|';
  EXPECT_EQ(parse("a|b\n1|2\n", pipe).rows[0], (std::vector<std::string>{"1", "2"}));
}

TEST(CsvReader, SkipRowsAndNoHeader) {
  CsvOptions o;
  o.skip_rows = 1;
  o.header = false;
  CsvTable t = parse("150,4,setosa,versicolor,virginica\n5.1,3.5,1.4,0.2,0\n4.9,3.0,1.4,0.2,0\n", o);
  EXPECT_EQ(t.columns, (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.lines[0], 2);
}

// A header row of numbers is most likely data (scikit-learn's wine_data.csv read with --skip-rows 1
// but without --no-header): a note, not an error; a header of names (or one number among names) none.
TEST(CsvReader, HeaderOfNumbersIsNoted) {
  CsvOptions o;
  o.skip_rows = 1;
  const CsvTable t = parse("178,13,class_0,class_1,class_2\n14.23,1.71, +2.43,1e2,0\n13.2,1.78,2.14,11.2,0\n", o);
  EXPECT_EQ(t.columns[2], " +2.43");  // still read as asked
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_EQ(t.notes[0], "t.csv: every field of the header row (line 2) is a number: if it is data, read the file with "
                        "--no-header (in Kiln Studio, clear the Dataset panel's 'Header row' box)");
  EXPECT_NE(parse("\n\n1,2\n3,4\n").notes.at(0).find("header row (line 3) is a number"), std::string::npos);
  EXPECT_TRUE(parse("a,b\n1,2\n").notes.empty());
  EXPECT_TRUE(parse("year,2024\n1,2\n").notes.empty());
  EXPECT_TRUE(parse(",1\n1,2\n").notes.empty());  // an unnamed column is no number
  EXPECT_TRUE(parse("178,13,class_0\n1,2,3\n").notes.empty());
  CsvOptions none;
  none.header = false;
  EXPECT_TRUE(parse("1,2\n3,4\n", none).notes.empty());  // columns "0", "1" are not a header
}

TEST(CsvReader, GzipFileReadsAsPlain) {
  const std::string text = "a,b\n1,2\n3,4\n";
  const std::string plain = temp_file("plain.csv", text), gz = temp_file("t.csv.gz", gzip_stored(text));
  CsvTable a = read_csv(plain), b = read_csv(gz);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(b.source, gz);
  // A truncated stream is an error naming the file.
  const std::string cut = temp_file("cut.csv.gz", gzip_stored(text).substr(0, 16));
  try {
    read_csv(cut);
    FAIL() << "a truncated gzip file was read";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
  }
  fs::remove(plain), fs::remove(gz), fs::remove(cut);
}

TEST(CsvReader, RaggedRowNamesFileLineAndCounts) {
  EXPECT_EQ(error_of("a,b,c\n1,2,3\n4,5\n"),
            "t.csv:3: 2 fields but the header has 3 (ragged rows; is the delimiter ',' right?)");
  CsvOptions no_header;
  no_header.header = false;
  EXPECT_NE(error_of("1,2\n3,4,5\n", no_header).find("t.csv:2: 3 fields but the first row has 2"),
            std::string::npos);
}

TEST(CsvReader, NotUtf8NamesLineAndByte) {
  EXPECT_EQ(error_of("a,b\n1,2\ncaf\xE9,3\n"), "t.csv:3: not UTF-8 (byte 0xE9 at column 4); save the file as UTF-8");
  EXPECT_EQ(error_of("\xFF\xFE" "a\0,\0b\0"), "t.csv:1: the file is UTF-16; save it as UTF-8");
  EXPECT_EQ(invalid_utf8_offset("ok \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::string_view::npos);
  EXPECT_EQ(invalid_utf8_offset("\xC0\xAF"), 0u);          // overlong '/'
  EXPECT_EQ(invalid_utf8_offset("ab\xED\xA0\x80"), 2u);     // a UTF-16 surrogate
  EXPECT_EQ(invalid_utf8_offset("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(invalid_utf8_offset("x\xE2\x82"), 1u);         // cut short
}

TEST(CsvReader, MalformedQuotesAndHeaders) {
  EXPECT_EQ(error_of("a,b\n1,\"open\n2,3\n"), "t.csv:2: a quoted field opened here never closes");
  EXPECT_NE(error_of("a,b\n\"x\"y,2\n").find("t.csv:2: text after a closing quote (field 1)"), std::string::npos);
  EXPECT_NE(error_of("a,b,a\n1,2,3\n").find("t.csv:1: the header names column 'a' twice"), std::string::npos);
  EXPECT_EQ(error_of("a,b\n"), "t.csv: no data rows after the header");
  EXPECT_EQ(error_of(""), "t.csv: no data rows after the header");
}

TEST(CsvReader, MissingFileAndDirectory) {
  EXPECT_THROW(read_csv("/nonexistent/kiln.csv"), IoError);
  EXPECT_THROW(read_csv(fs::temp_directory_path().string()), IoError);
}

TEST(CsvReader, ScikitLearnTables) {
  const std::string dir = "/usr/lib/python3/dist-packages/sklearn/datasets/data";
  KILN_SKIP_UNLESS_DEP(fs::exists(dir + "/breast_cancer.csv"), "python3-sklearn", "no scikit-learn tables in " + dir);
  CsvOptions o;
  o.skip_rows = 1;
  o.header = false;
  CsvTable bc = read_csv(dir + "/breast_cancer.csv", o);
  EXPECT_EQ(bc.rows.size(), 569u);
  EXPECT_EQ(bc.columns.size(), 31u);
  CsvOptions digits_o;
  digits_o.header = false;
  CsvTable digits = read_csv(dir + "/digits.csv.gz", digits_o);
  EXPECT_EQ(digits.rows.size(), 1797u);
  EXPECT_EQ(digits.columns.size(), 65u);
  CsvOptions boston_o;
  boston_o.skip_rows = 1;
  CsvTable boston = read_csv(dir + "/boston_house_prices.csv", boston_o);
  EXPECT_EQ(boston.columns.back(), "MEDV");  // a quoted header
  EXPECT_EQ(boston.rows.size(), 506u);
}
