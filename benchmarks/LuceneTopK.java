// BM25 top-k with Lucene's dynamic pruning (block-max WAND), timed against the same search made exhaustive.
// Run by benchmarks/lucene_wand.py, which says how to install Lucene and compiles this file.
//
// args: POOL QUERIES K INDEX_DIR TOP_OUT. POOL: one sentence a line, already tokenised (tokens joined by spaces,
// so Lucene's whitespace analyzer sees cohbench's tokens); QUERIES: the same; prints one JSON line; writes each
// query's pruned top k (document numbers = pool line numbers) to TOP_OUT, one query a line.

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.lucene.analysis.core.WhitespaceAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopScoreDocCollector;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.store.MMapDirectory;

public class LuceneTopK {
  public static void main(String[] args) throws Exception {
    List<String> pool = Files.readAllLines(Paths.get(args[0]));
    List<String> queryLines = Files.readAllLines(Paths.get(args[1]));
    int k = Integer.parseInt(args[2]);
    Path dir = Paths.get(args[3]);
    BM25Similarity bm25 = new BM25Similarity(1.2f, 0.75f);  // tantivy's k1 and b

    long started = System.nanoTime();
    IndexWriterConfig config = new IndexWriterConfig(new WhitespaceAnalyzer());
    config.setSimilarity(bm25);
    config.setRAMBufferSizeMB(1900);
    FieldType text = new FieldType();
    text.setIndexOptions(IndexOptions.DOCS_AND_FREQS);  // BM25 needs no positions
    text.setTokenized(true);
    text.freeze();
    try (IndexWriter writer = new IndexWriter(FSDirectory.open(dir), config)) {
      for (String sentence : pool) {
        Document document = new Document();
        document.add(new Field("text", sentence, text));
        writer.addDocument(document);
      }
      writer.forceMerge(1);  // one segment: document numbers are pool line numbers
    }
    double buildSeconds = (System.nanoTime() - started) / 1e9;

    DirectoryReader reader = DirectoryReader.open(MMapDirectory.open(dir));
    IndexSearcher searcher = new IndexSearcher(reader);
    searcher.setSimilarity(bm25);
    List<Query> queries = new ArrayList<>();
    for (String line : queryLines) {
      BooleanQuery.Builder or = new BooleanQuery.Builder();  // the OR of the tokens, a repeated token each time
      for (String token : line.split(" ")) {
        if (!token.isEmpty()) {
          or.add(new TermQuery(new Term("text", token)), BooleanClause.Occur.SHOULD);
        }
      }
      queries.add(or.build());
    }
    for (int round = 0; round < 3; round++) {  // let the JIT compile both paths before timing
      for (Query query : queries) {
        searcher.search(query, k);
        searcher.search(query, TopScoreDocCollector.create(k, Integer.MAX_VALUE));
      }
    }

    double[] pruned = new double[queries.size()];
    double[] exhaustive = new double[queries.size()];
    int sameDocuments = 0;
    int sameScores = 0;
    StringBuilder tops = new StringBuilder();
    for (int i = 0; i < queries.size(); i++) {
      long start = System.nanoTime();
      TopDocs top = searcher.search(queries.get(i), k);  // counts 1,000 hits, then block-max WAND skips
      pruned[i] = (System.nanoTime() - start) / 1e6;
      TopScoreDocCollector everything = TopScoreDocCollector.create(k, Integer.MAX_VALUE);  // counts every hit
      start = System.nanoTime();
      searcher.search(queries.get(i), everything);
      TopDocs all = everything.topDocs();
      exhaustive[i] = (System.nanoTime() - start) / 1e6;
      boolean documents = top.scoreDocs.length == all.scoreDocs.length;
      boolean scores = documents;
      for (int j = 0; documents && j < top.scoreDocs.length; j++) {
        documents = top.scoreDocs[j].doc == all.scoreDocs[j].doc;
        scores = scores && top.scoreDocs[j].score == all.scoreDocs[j].score;
      }
      sameDocuments += documents ? 1 : 0;
      sameScores += documents && scores ? 1 : 0;
      for (ScoreDoc hit : top.scoreDocs) {
        tops.append(hit.doc).append(' ');
      }
      tops.append('\n');
    }
    Files.write(Paths.get(args[4]), tops.toString().getBytes("UTF-8"));
    System.out.printf(
        "{\"pool_sentences\": %d, \"build_seconds\": %.1f, \"segments\": %d, \"ms_per_query_median\": %.3f,"
            + " \"ms_per_query\": %.3f, \"exhaustive_ms_per_query_median\": %.3f, \"exhaustive_ms_per_query\": %.3f,"
            + " \"queries_with_the_exhaustive_top_k\": %d, \"queries_with_bit_equal_scores\": %d}%n",
        pool.size(), buildSeconds, reader.leaves().size(), median(pruned), mean(pruned), median(exhaustive),
        mean(exhaustive), sameDocuments, sameScores);
  }

  static double median(double[] values) {  // as Python's statistics.median, which the other benchmarks use
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    int middle = sorted.length / 2;
    return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  }

  static double mean(double[] values) {
    return Arrays.stream(values).average().orElse(Double.NaN);
  }
}
