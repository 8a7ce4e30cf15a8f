// The Protégé-grade check of the Jido ontology: what Protégé's OWL API and HermiT would say.
//
// Usage: java -cp "CLASSES:JARS/*" OwlCheck ONTOLOGY.ttl [DATA.ttl ...]
// The first file is the ontology; further files are data parsed into the same ontology, so
// written data can be checked against it. Every file is read by the OWL API's own Turtle
// parser only (no silent fallback to RDF/XML, functional syntax ...); unparsed triples and
// guessed declarations count as parse issues.
// Prints one JSON object on stdout; exit 0 when clean, 1 on findings, 2 on usage or I/O error.

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Stream;

import org.semanticweb.HermiT.Configuration;
import org.semanticweb.HermiT.ReasonerFactory;
import org.semanticweb.owlapi.apibinding.OWLManager;
import org.semanticweb.owlapi.formats.TurtleDocumentFormat;
import org.semanticweb.owlapi.io.FileDocumentSource;
import org.semanticweb.owlapi.io.OWLOntologyLoaderMetaData;
import org.semanticweb.owlapi.io.OWLParserException;
import org.semanticweb.owlapi.io.UnparsableOntologyException;
import org.semanticweb.owlapi.model.MissingImportHandlingStrategy;
import org.semanticweb.owlapi.model.OWLClass;
import org.semanticweb.owlapi.model.OWLDocumentFormat;
import org.semanticweb.owlapi.model.OWLOntology;
import org.semanticweb.owlapi.model.OWLOntologyLoaderConfiguration;
import org.semanticweb.owlapi.model.OWLOntologyManager;
import org.semanticweb.owlapi.model.parameters.Imports;
import org.semanticweb.owlapi.profiles.OWL2DLProfile;
import org.semanticweb.owlapi.profiles.OWLProfileViolation;
import org.semanticweb.owlapi.reasoner.OWLReasoner;
import org.semanticweb.owlapi.rdf.turtle.parser.TurtleOntologyParser;
import org.semanticweb.owlapi.rdf.turtle.parser.TurtleOntologyParserFactory;

public final class OwlCheck {
    private static final int MAX_MESSAGE = 600;

    private final List<String> parseIssues = new ArrayList<>();
    private final List<String> dlViolations = new ArrayList<>();
    private final List<String> unsatisfiable = new ArrayList<>();
    private final List<String> reasonerErrors = new ArrayList<>();
    private Boolean consistent;
    private OWLOntology ontology;

    private OwlCheck() {}

    public static void main(String[] args) {
        // Quiet the OWL API's slf4j logging; findings go to the JSON report, not to stderr noise.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "error");
        if (args.length == 0) {
            System.err.println("usage: OwlCheck ONTOLOGY.ttl [DATA.ttl ...]");
            System.exit(2);
        }
        List<File> files = new ArrayList<>();
        for (String arg : args) {
            File file = new File(arg);
            if (!file.isFile() || !file.canRead()) {
                System.err.println("OwlCheck: cannot read " + arg);
                System.exit(2);
            }
            files.add(file);
        }
        OwlCheck check = new OwlCheck();
        check.run(files);
        System.out.println(check.toJson());
        System.exit(check.clean() ? 0 : 1);
    }

    private void run(List<File> files) {
        OWLOntologyManager manager = OWLManager.createOWLOntologyManager();
        // Only the Turtle parser: a broken file must fail, not be "rescued" by another syntax.
        manager.getOntologyParsers().set(new TurtleOntologyParserFactory());
        manager.addMissingImportListener(
                event -> parseIssues.add("missing import " + event.getImportedOntologyURI()));
        // Not setStrict(true): the OWL API 5.1.9 strict RDF consumer rejects valid OWL 2 such as
        // `rdfs:domain [ a owl:Class ; owl:unionOf ( ... ) ]` ("Entity not properly recognized ...
        // error#Error1"). Protégé loads leniently; we do too, and then treat every triple the
        // parser could not map and every declaration it had to guess as a parse issue, which is
        // what strict mode is meant to catch.
        OWLOntologyLoaderConfiguration config = manager.getOntologyLoaderConfiguration()
                .setReportStackTraces(false)
                .setMissingImportHandlingStrategy(MissingImportHandlingStrategy.SILENT);

        File first = files.get(0);
        try {
            ontology = manager.loadOntologyFromOntologyDocument(
                    new FileDocumentSource(first, new TurtleDocumentFormat()), config);
            collectLoaderIssues(first, manager.getOntologyFormat(ontology));
        } catch (Exception e) {
            parseIssues.add(first.getName() + ": " + message(e));
            return;
        }
        // Data files go into the same ontology so their terms resolve against its declarations.
        for (File data : files.subList(1, files.size())) {
            try {
                OWLDocumentFormat format = new TurtleOntologyParser().parse(
                        new FileDocumentSource(data, new TurtleDocumentFormat()), ontology, config);
                collectLoaderIssues(data, format);
            } catch (Exception e) {
                parseIssues.add(data.getName() + ": " + message(e));
            }
        }

        for (OWLProfileViolation violation : new OWL2DLProfile().checkOntology(ontology).getViolations()) {
            dlViolations.add(truncate(violation.toString()));
        }
        reason();
    }

    private void collectLoaderIssues(File file, OWLDocumentFormat format) {
        if (format == null) {
            return;
        }
        Optional<OWLOntologyLoaderMetaData> meta = format.getOntologyLoaderMetaData();
        if (!meta.isPresent()) {
            return;
        }
        TreeSet<String> found = new TreeSet<>();
        meta.get().getUnparsedTriples().forEach(t -> found.add(
                file.getName() + ": unparsed triple " + t.getSubject() + " " + t.getPredicate() + " " + t.getObject()));
        meta.get().getGuessedDeclarations().entries().forEach(e -> found.add(
                file.getName() + ": guessed declaration " + e.getKey() + " as " + e.getValue().getSimpleName()));
        for (String issue : found) {
            parseIssues.add(truncate(issue));
        }
    }

    private void reason() {
        OWLReasoner reasoner = null;
        try {
            Configuration configuration = new Configuration();
            configuration.throwInconsistentOntologyException = false;
            reasoner = new ReasonerFactory().createReasoner(ontology, configuration);
            consistent = reasoner.isConsistent();
            if (consistent) {
                TreeSet<String> names = new TreeSet<>();
                for (OWLClass cls : reasoner.getUnsatisfiableClasses().getEntitiesMinusBottom()) {
                    names.add(cls.getIRI().toString());
                }
                unsatisfiable.addAll(names);
            }
        } catch (Exception e) {
            reasonerErrors.add(message(e));
        } finally {
            if (reasoner != null) {
                reasoner.dispose();
            }
        }
    }

    private boolean clean() {
        return parseIssues.isEmpty() && dlViolations.isEmpty() && reasonerErrors.isEmpty()
                && Boolean.TRUE.equals(consistent) && unsatisfiable.isEmpty();
    }

    private String toJson() {
        StringBuilder out = new StringBuilder("{");
        field(out, "parse_issues", list(parseIssues)).append(',');
        field(out, "dl_violations", list(dlViolations)).append(',');
        field(out, "consistent", consistent == null ? "null" : consistent.toString()).append(',');
        field(out, "unsatisfiable", list(unsatisfiable)).append(',');
        field(out, "reasoner_errors", list(reasonerErrors)).append(',');
        field(out, "axioms", String.valueOf(ontology == null ? 0 : ontology.getAxiomCount())).append(',');
        field(out, "logical_axioms", String.valueOf(ontology == null ? 0 : ontology.getLogicalAxiomCount())).append(',');
        field(out, "classes", count(o -> o.classesInSignature(Imports.INCLUDED))).append(',');
        field(out, "object_properties", count(o -> o.objectPropertiesInSignature(Imports.INCLUDED))).append(',');
        field(out, "data_properties", count(o -> o.dataPropertiesInSignature(Imports.INCLUDED))).append(',');
        field(out, "annotation_properties", count(o -> o.annotationPropertiesInSignature(Imports.INCLUDED))).append(',');
        field(out, "individuals", count(o -> o.individualsInSignature(Imports.INCLUDED)));
        return out.append('}').toString();
    }

    private String count(Function<OWLOntology, Stream<?>> signature) {
        return String.valueOf(ontology == null ? 0 : signature.apply(ontology).count());
    }

    private static StringBuilder field(StringBuilder out, String name, String json) {
        return out.append(quote(name)).append(':').append(json);
    }

    private static String list(List<String> items) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < items.size(); i++) {
            out.append(i == 0 ? "" : ",").append(quote(items.get(i)));
        }
        return out.append(']').toString();
    }

    private static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }

    private static String message(Throwable e) {
        if (e instanceof UnparsableOntologyException) {
            // Keep the parser's own message (line and column), not the OWL API's wrapper banner.
            StringBuilder out = new StringBuilder();
            for (OWLParserException cause : ((UnparsableOntologyException) e).getExceptions().values()) {
                out.append(out.length() == 0 ? "" : "; ").append(String.valueOf(cause.getMessage()).trim());
            }
            if (out.length() > 0) {
                return truncate("Turtle parse error: " + out.toString().replaceAll("\\s+", " "));
            }
        }
        String text = e.getMessage() == null ? e.getClass().getName() : e.getClass().getSimpleName() + ": " + e.getMessage();
        return truncate(text.trim());
    }

    private static String truncate(String text) {
        return text.length() <= MAX_MESSAGE ? text : text.substring(0, MAX_MESSAGE) + " ...";
    }
}
