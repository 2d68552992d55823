package io.github.dblock.sample.stock;

import java.util.Map;

import io.github.dblock.LockNotAcquiredException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * HTTP access to the stock service:
 * <pre>
 * curl localhost:8080/stock/demo-sku
 * curl -X POST 'localhost:8080/stock/demo-sku/purchase?buyer=alice'
 * curl -X POST 'localhost:8080/stock/demo-sku/purchase?buyer=bob&amp;quantity=3'
 * </pre>
 */
@RestController
public class StockController {

	private final StockService stockService;

	public StockController(StockService stockService) {
		this.stockService = stockService;
	}

	/** The stock of a product; 404 if unknown. */
	@GetMapping("/stock/{sku}")
	public Stock stock(@PathVariable String sku) {
		return this.stockService.find(sku).orElseThrow(() -> new UnknownSkuException(sku));
	}

	/** Buys units of a product, under the distributed lock; 409 when sold out. */
	@PostMapping("/stock/{sku}/purchase")
	public ResponseEntity<Map<String, Object>> purchase(@PathVariable String sku, @RequestParam String buyer,
			@RequestParam(defaultValue = "1") int quantity) {
		boolean bought = this.stockService.purchase(sku, quantity, buyer);
		Stock stock = stock(sku);
		Map<String, Object> body = Map.of("sku", sku, "buyer", buyer, "quantity", quantity, "purchased", bought,
				"available", stock.available());
		return ResponseEntity.status(bought ? HttpStatus.OK : HttpStatus.CONFLICT).body(body);
	}

	@ExceptionHandler
	ProblemDetail unknownSku(UnknownSkuException ex) {
		return ProblemDetail.forStatusAndDetail(HttpStatus.NOT_FOUND, ex.getMessage());
	}

	@ExceptionHandler
	ProblemDetail invalidArgument(IllegalArgumentException ex) {
		return ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST, ex.getMessage());
	}

	/** Too many buyers queued for the same product: ask the client to retry. */
	@ExceptionHandler
	ResponseEntity<ProblemDetail> busy(LockNotAcquiredException ex) {
		ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.SERVICE_UNAVAILABLE, ex.getMessage());
		return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).header("Retry-After", "1").body(problem);
	}

}
