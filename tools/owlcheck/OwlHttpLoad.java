// Loads ontologies over HTTP with the OWL API, as Protégé's "Open from URL" does.
//
// Usage: java -cp "CLASSES:JARS/*" OwlHttpLoad URL [URL ...]
// Each URL is loaded into its own manager (content negotiation by the OWL API itself).
// Prints one JSON object {"URL": {"axioms": N, "format": "..."}, ...}; exit 0 when every URL
// loaded, 1 when one failed (its entry then has "error").

import java.util.ArrayList;
import java.util.List;

import org.semanticweb.owlapi.apibinding.OWLManager;
import org.semanticweb.owlapi.model.IRI;
import org.semanticweb.owlapi.model.OWLOntology;
import org.semanticweb.owlapi.model.OWLOntologyManager;

public final class OwlHttpLoad {
    private OwlHttpLoad() {}

    public static void main(String[] args) {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "error");
        List<String> entries = new ArrayList<>();
        boolean ok = true;
        for (String url : args) {
            OWLOntologyManager manager = OWLManager.createOWLOntologyManager();
            try {
                OWLOntology ontology = manager.loadOntologyFromOntologyDocument(IRI.create(url));
                String format = String.valueOf(manager.getOntologyFormat(ontology));
                entries.add(quote(url) + ":{\"axioms\":" + ontology.getAxiomCount()
                        + ",\"format\":" + quote(format) + "}");
            } catch (Exception e) {
                ok = false;
                entries.add(quote(url) + ":{\"error\":" + quote(String.valueOf(e)) + "}");
            }
        }
        System.out.println("{" + String.join(",", entries) + "}");
        System.exit(ok ? 0 : 1);
    }

    private static String quote(String s) {
        String cut = s.length() > 600 ? s.substring(0, 600) : s;
        return "\"" + cut.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }
}
